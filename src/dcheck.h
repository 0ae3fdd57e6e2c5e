// SPDX-License-Identifier: MIT
// src/dcheck.h - KNIT_DCHECK(cond): the runtime's "cannot happen" checks.
//
// Contract: KNIT_DCHECK(cond) states an invariant the code relies on and that
// nothing outside the library can break (a count the library keeps itself, a
// geometry it computed, a record it found in its own table). It is not an
// argument check and never guards anything read from shared memory or written
// by a worker process: those are untrusted and get an error code or a
// protocol kill, in every build.
//
// Where KNIT_DEBUG_CHECKS is 1 - libknitting-test.a (the white-box tests and
// the stress tests link it), every sanitizer build and the fuzzers - a false
// cond prints "libknitting: DCHECK failed: FILE:LINE: cond" on stderr and
// aborts the process, so a test that reaches the branch fails loudly. In the
// shipped libraries (KNIT_DEBUG_CHECKS unset) it compiles to nothing: cond is
// type-checked but never evaluated, so it must have no side effect. The code
// after a KNIT_DCHECK still handles the case the way release builds need (a
// return, a skip), so both builds stay correct.
//
// Floor: the bottom (includes nothing of src/); any room may use it.
#ifndef KNIT_SRC_DCHECK_H
#define KNIT_SRC_DCHECK_H

#if defined(KNIT_DEBUG_CHECKS) && KNIT_DEBUG_CHECKS
namespace knit::detail {
[[noreturn]] void dcheck_failed(const char *file, int line, const char *cond) noexcept;
} // namespace knit::detail
#define KNIT_DCHECK(cond)                                                                          \
	do {                                                                                       \
		if (__builtin_expect(!(cond), 0))                                                  \
			::knit::detail::dcheck_failed(__FILE__, __LINE__, #cond);                  \
	} while (0)
#else
#define KNIT_DCHECK(cond) ((void)sizeof(!(cond)))
#endif

#endif
