// The one entry point of charter's kernel bindings, for the module that hosts them:
//
//     NB_MODULE(_native, m) { ...; charter_register_kernels(m); }
//
// It adds one function per kernel contract (specs/kernels/*.yaml) to m, defined in
// generated/bindings/_register.cpp (charter generate writes it).
#pragma once

#include <nanobind/nanobind.h>

void charter_register_kernels(nanobind::module_& m);
