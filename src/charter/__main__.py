import sys

from charter.cli import main

sys.exit(main())
