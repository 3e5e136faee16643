from charter.cli import entry

entry()
