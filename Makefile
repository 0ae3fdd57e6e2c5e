# SPDX-License-Identifier: MIT
# libknitting - the one entry point. This Makefile is also the configure
# step: arch and feature probes are $(shell ...) lines below.
#
#   make                 library, static test build, tools
#   make demo            build and run the demo
#   make bench           install the peers, build and run knit-bench
#   make check           every test suite, one summary line at the end
#   make format | format-check         clang-format the tree, or check it
#   make check-style | check-unit | check-api | check-stress | check-cross | check-model |
#        check-fuzz | check-ffi | check-python | check-cxx | check-install | abi-check | man-check
#   make man-version     write the version of include/knitting.h into the man footers
#   make SANITIZE=thread|address check    everything under a sanitizer
#   make install DESTDIR=... prefix=...   (and make uninstall, same arguments);
#                        PYTHONDIR=... for the Python package (see install-python)
#   V=1                  show commands
#   WERROR=1             warnings are errors (CI sets it)
#   CPPFLAGS, CFLAGS, CXXFLAGS, LDFLAGS from the environment are honoured

.DEFAULT_GOAL := all
SHELL := /bin/bash

# The version has one source, include/knitting.h: the library, the SONAME,
# knitting.pc and the CMake package all read it from there.
knit_ver = $(shell sed -n 's/^\#define KNIT_VERSION_$(1) \([0-9][0-9]*\)$$/\1/p' include/knitting.h)
VERSION_MAJOR := $(call knit_ver,MAJOR)
VERSION_MINOR := $(call knit_ver,MINOR)
VERSION_PATCH := $(call knit_ver,PATCH)
ifeq ($(VERSION_MAJOR)$(VERSION_MINOR)$(VERSION_PATCH),)
$(error cannot read KNIT_VERSION_MAJOR/MINOR/PATCH from include/knitting.h)
endif
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)
SONAME := libknitting.so.$(VERSION_MAJOR)

prefix ?= /usr/local
libdir ?= $(prefix)/lib
includedir ?= $(prefix)/include
mandir ?= $(prefix)/share/man
bindir ?= $(prefix)/bin
sbindir ?= $(prefix)/sbin
# knit-worker, the process pools' helper, is architecture-dependent: by
# default it goes under $(libdir), so a multiarch libdir (/usr/lib/<triplet>)
# makes it arch-qualified and the library's package can be Multi-Arch: same.
# Its place is compiled into the library (see KW_REL below); an application
# can still name another one with worker_path or KNIT_WORKER_PATH.
libexecdir ?= $(libdir)
pkglibexecdir ?= $(libexecdir)/knitting
cmakedir ?= $(libdir)/cmake/knitting
DESTDIR ?=

# Quiet commands: a rule says what it makes with $(call msg,WHAT,FILE) on a
# line of its own ("  CXX   src/api.cpp"); V=1 prints the commands instead.
# Build directories are order-only prerequisites (`| $(B)/lib`), made by the
# one rule for $(BUILD_DIRS) at the end of this file.
ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-5s %s\n' '$(1)' '$(2)'
endif

CC := gcc
CXX := g++

# ---- probes ----------------------------------------------------------------
ARCH := $(shell $(CC) -dumpmachine | cut -d- -f1)
HAVE_CLANG := $(shell command -v clang >/dev/null 2>&1 && echo 1)
MULTIARCH_INC := /usr/include/$(shell $(CC) -dumpmachine)

# ---- configuration -----------------------------------------------------------
SANITIZE ?=
ifeq ($(SANITIZE),)
B := build
SAN_FLAGS :=
else ifeq ($(SANITIZE),thread)
B := build/tsan
# TSan cannot see inline asm: the sanitized build runs on the builtins layer.
SAN_FLAGS := -fsanitize=thread -DKNIT_USE_CC_BUILTINS=1
else ifeq ($(SANITIZE),address)
B := build/asan
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else
$(error SANITIZE must be thread or address)
endif
ifeq ($(KNIT_USE_CC_BUILTINS),1)
SAN_FLAGS += -DKNIT_USE_CC_BUILTINS=1
endif
# KNIT_DCHECK (src/dcheck.h) is live in every sanitizer build and in the
# white-box test archive, and compiles to nothing in what is shipped.
DCHECK_FLAGS := -DKNIT_DEBUG_CHECKS=1
ifneq ($(SANITIZE),)
SAN_FLAGS += $(DCHECK_FLAGS)
endif

OPT ?= -O2
# Warnings are errors only when asked (WERROR=1, as CI does): a newer
# compiler's new warning must not break a user's or a distribution's build.
WERROR ?=
WARN := -Wall -Wextra -Wno-missing-field-initializers $(if $(filter 1,$(WERROR)),-Werror)
# CPPFLAGS, CFLAGS, CXXFLAGS and LDFLAGS from the environment or the command
# line (a distribution's hardening flags) come after ours, so they win.
CPPFLAGS_ALL := -I. -Iinclude -I$(B)/gen -D_GNU_SOURCE $(CPPFLAGS)
CFLAGS_ALL := -std=gnu11 $(OPT) -g $(WARN) $(SAN_FLAGS) $(CFLAGS)
# No libstdc++ at run time: no exceptions, no RTTI, no guarded statics.
CXXFLAGS_ALL := -std=c++20 $(OPT) -g $(WARN) -fno-exceptions -fno-rtti \
	-fno-threadsafe-statics -fvisibility=hidden -fvisibility-inlines-hidden \
	-fno-plt $(SAN_FLAGS) $(CXXFLAGS)
LIB_LDLIBS := -lurcu-common -lpthread
# Link-time optimisation of the shared library: an enqueued call crosses
# api -> dispatch -> lock2 -> codec -> calls, and inlining across them takes
# about 15% of the host's instructions per call away. Fat objects: the
# static archives carry ordinary code too (tests and users link them without
# LTO), and the installed one is stripped of the LTO sections, which only the
# compiler that wrote them can read. GCC only (the .so is linked by $(CC));
# not under a sanitizer; LTO= turns it off. src/syncline.cpp stays out: with
# it in, the hot knit_call measured slower (knit.call.hot p50, ~5%, cause not
# found), and the synchronous path gains nothing from crossing files.
CXX_IS_GCC := $(shell $(CXX) -v 2>&1 | grep -q '^gcc version' && echo 1)
LTO ?= $(if $(SANITIZE),,$(if $(CXX_IS_GCC),-flto=auto -ffat-lto-objects))
LTO_SKIP := src/syncline.cpp

# ---- library ------------------------------------------------------------------
LIB_SRCS := $(sort $(wildcard src/*.cpp))
LIB_OBJS := $(LIB_SRCS:%.cpp=$(B)/obj/%.o)
LIB_SO := $(B)/lib/$(SONAME)
LIB_LINK := $(B)/lib/libknitting.so
LIB_TEST_A := $(B)/lib/libknitting-test.a
LIB_INT_A := $(B)/lib/libknitting-internal.a
LIB_A := $(B)/lib/libknitting.a
LIB_PC := $(B)/pkgconfig/knitting.pc
KW_BIN := $(B)/libexec/knitting/knit-worker
# The test archive's objects: the same sources with KNIT_DCHECK live, without
# LTO. Under a sanitizer every object has it live already, so the archive
# takes the library's objects.
ifeq ($(SANITIZE),)
LIB_TEST_OBJS := $(LIB_SRCS:%.cpp=$(B)/obj-test/%.o)
else
LIB_TEST_OBJS := $(LIB_OBJS)
endif
DEPFILES := $(LIB_OBJS:.o=.d) $(B)/obj/src/proc_files-static.d $(if $(SANITIZE),,$(LIB_TEST_OBJS:.o=.d))

# Where the library looks for the installed knit-worker (src/proc_files.cpp,
# default_worker_path), from the install variables: KW_REL, relative to the
# library's own directory, goes into the shared library (its install may be
# staged under DESTDIR or moved); KW_ABS, the absolute path, only into
# libknitting.a (a program linked with it has no library file to start
# from). KW_RPATH: how the installed worker finds the library, then the
# build tree's. Each value also sits in a stamp file that changes only when
# the value does, so `make install prefix=... libdir=...` after a plain
# `make` rebuilds exactly what carries a different path.
KW_REL := $(shell realpath -m --relative-to=$(libdir) $(pkglibexecdir))/knit-worker
KW_ABS := $(pkglibexecdir)/knit-worker
KW_RPATH := $$ORIGIN/$(shell realpath -m --relative-to=$(pkglibexecdir) $(libdir)):$$ORIGIN/../../lib
$(B)/install-rel.stamp: FORCE | $(B)
	$(Q)v='$(KW_REL) $(KW_RPATH)'; echo "$$v" | cmp -s - $@ || echo "$$v" > $@
$(B)/install-abs.stamp: FORCE | $(B)
	$(Q)v='$(KW_REL) $(KW_ABS)'; echo "$$v" | cmp -s - $@ || echo "$$v" > $@
$(B)/obj/src/proc_files.o $(B)/obj-test/src/proc_files.o: CPPFLAGS_ALL += -DKNIT_WORKER_REL='"$(KW_REL)"'
$(B)/obj/src/proc_files.o $(B)/obj-test/src/proc_files.o: $(B)/install-rel.stamp

# The names of this architecture's syscalls (src/sysname.h): every __NR_
# macro the compiler's <sys/syscall.h> defines, each under its #ifdef so the
# compiler evaluates the numbers (the non-syscalls __NR_syscalls and
# __NR_arch_specific_syscall left out). Rewritten only when it changes.
SYSNAMES := $(B)/gen/sysnames.inc
$(SYSNAMES): FORCE | $(B)/gen
	$(Q)echo '#include <sys/syscall.h>' | $(CC) $(CPPFLAGS) -dM -E -x c - | \
		sed -n 's/^#define __NR_\([a-z0-9_]*\)[[:space:]].*/\1/p' | \
		grep -vx 'syscalls\|arch_specific_syscall' | LC_ALL=C sort -u | \
		awk '{ printf "#ifdef __NR_%s\nKNIT_SYSNAME(%s)\n#endif\n", $$1, $$1 }' > $@.tmp && \
		test -s $@.tmp && { cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@; }
$(B)/obj/src/sysname.o $(B)/obj-test/src/sysname.o: $(SYSNAMES)

all: $(LIB_LINK) $(LIB_A) $(LIB_PC) $(LIB_TEST_A) $(KW_BIN) tools

$(B)/obj/%.o: %.cpp | $(B)/obj/src
	$(call msg,CXX,$<)
	$(Q)$(CXX) $(CPPFLAGS_ALL) $(CXXFLAGS_ALL) $(if $(filter $<,$(LTO_SKIP)),,$(LTO)) -fPIC -MMD -MP \
		-c $< -o $@

# Linked with gcc, not g++, and with -z defs: any libstdc++ symbol the C++
# code pulls in fails the link instead of sneaking in at run time.
$(LIB_SO): $(LIB_OBJS) abi/libknitting.map | $(B)/lib
	$(call msg,LD,$@)
	$(Q)$(CC) -shared $(SAN_FLAGS) $(OPT) $(LTO) $(LDFLAGS) -Wl,-soname,$(SONAME) \
		-Wl,--version-script=abi/libknitting.map -Wl,-z,defs -Wl,-z,now \
		-Wl,--as-needed -o $@ $(LIB_OBJS) $(LIB_LDLIBS)

$(LIB_LINK): $(LIB_SO)
	$(Q)ln -sf $(SONAME) $@

$(B)/obj-test/%.o: %.cpp | $(B)/obj-test/src
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(CPPFLAGS_ALL) $(DCHECK_FLAGS) $(CXXFLAGS_ALL) -fPIC -MMD -MP -c $< -o $@

$(LIB_TEST_A): $(LIB_TEST_OBJS) | $(B)/lib
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# The library's own objects as an archive, for knit-bench's protocol floors:
# they must measure the code that ships, not the test build.
$(LIB_INT_A): $(LIB_OBJS) | $(B)/lib
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# The installed static library: the code of the .so (proc_files.cpp with the
# absolute worker path) in one relocatable object whose only global symbols
# are the map's exports, so that a program linking it keeps its own operator
# new/delete and C++ runtime and meets none of the library's internals: the
# library's references to them stay inside the object. Its COMDAT groups
# are dissolved (-R .group): were the program's copy of a group kept (the
# SDT probes' .stapsdt.base is one both may have), the object's localized
# references would point into a discarded section. The LTO sections are
# stripped: only the compiler that wrote them can read them. The test
# archive above is a separate file so white-box tests never depend on what
# is shipped.
LIB_A_OBJS := $(filter-out $(B)/obj/src/proc_files.o,$(LIB_OBJS)) $(B)/obj/src/proc_files-static.o
LIB_A_GLOBALS := $(B)/obj/libknitting.globals
$(B)/obj/src/proc_files-static.o: src/proc_files.cpp $(B)/install-abs.stamp | $(B)/obj/src
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(CPPFLAGS_ALL) -DKNIT_WORKER_REL='"$(KW_REL)"' -DKNIT_WORKER_ABS='"$(KW_ABS)"' \
		$(CXXFLAGS_ALL) -fPIC -MMD -MP -c $< -o $@
$(LIB_A_GLOBALS): abi/libknitting.map | $(B)/obj
	$(Q)sed -n 's/^[[:space:]]*\(knit_[A-Za-z0-9_]*\);.*/\1/p' $< > $@ && test -s $@
$(LIB_A): $(LIB_A_OBJS) $(LIB_A_GLOBALS) | $(B)/lib
	$(call msg,AR,$@)
	$(Q)$(LD) -r -o $(B)/obj/libknitting-a.o $(LIB_A_OBJS)
	$(Q)objcopy --keep-global-symbols=$(LIB_A_GLOBALS) -R .group \
		$(if $(LTO),--wildcard -R '.gnu.lto_*' -R '.gnu.debuglto_*') $(B)/obj/libknitting-a.o
	$(Q)rm -f $@ && ar rcs $@ $(B)/obj/libknitting-a.o

# An uninstalled knitting.pc: lets a consumer build against this checkout with
# PKG_CONFIG_PATH=build/pkgconfig (header from include/, library from build/lib,
# found at run time through the rpath).
$(LIB_PC): abi/knitting.pc.in Makefile | $(B)/pkgconfig
	$(Q)sed -e 's|@prefix@|$(CURDIR)|' -e 's|@libdir@|$(abspath $(B)/lib)|' \
		-e 's|@includedir@|$(CURDIR)/include|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|^Libs: .*|& -Wl,-rpath,$${libdir}|' $< > $@

-include $(DEPFILES)

# ---- knit-worker: a process pool's worker ----------------------------------------
# In the build tree at ../libexec/knitting/ beside build/lib, where the
# library looks after its install place (KW_REL). $ORIGIN (KW_RPATH): it
# finds the library from its own place, installed and in the build tree,
# without LD_LIBRARY_PATH.
# The sandbox's seccomp filter (tools/knit-worker/seccomp.c) is built with
# libseccomp, which only knit-worker links (libknitting stays on libc and
# liburcu; abi/check-exports.sh holds it to that). Without libseccomp-dev
# (tools/deps.sh installs it) the worker builds without it and refuses a
# pool that asks for KNIT_SANDBOX_SECCOMP, saying why.
KW_SECCOMP := $(shell pkg-config --exists libseccomp 2>/dev/null && echo 1 || echo 0)
KW_SRCS := tools/knit-worker/knit-worker.c $(if $(filter 1,$(KW_SECCOMP)),tools/knit-worker/seccomp.c)
$(KW_BIN): $(KW_SRCS) $(LIB_LINK) include/knitting.h $(B)/install-rel.stamp | $(B)/libexec/knitting
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -DKNIT_WORKER_SECCOMP=$(KW_SECCOMP) $(LDFLAGS) \
		$(KW_SRCS) -o $@ -L$(B)/lib -Wl,-rpath,'$(KW_RPATH)' -lknitting \
		$(if $(filter 1,$(KW_SECCOMP)),$(shell pkg-config --libs libseccomp))

# ---- tools ----------------------------------------------------------------------
# TOOLS (what `make` builds besides the library) and MAN_TOOLS (the tools
# whose --version man-check reads) grow in the tools' own sections below;
# the `tools` and man-check rules that use them stand at the end.
TOOLS :=
MAN_TOOLS :=

# ---- dependencies ---------------------------------------------------------------
# tools/deps.sh lists what each set holds: --demo for `make demo` (and a
# plain `make`), the whole test toolchain for `make check`, --bench for
# `make bench`.
deps:
	$(Q)sh tools/deps.sh
deps-demo:
	$(Q)sh tools/deps.sh --demo

# ---- tests ----------------------------------------------------------------------
RES ?= $(B)/results
# Suites run under a sanitizer are recorded as e.g. "thread-unit".
SP := $(if $(SANITIZE),$(SANITIZE)-,)
RUN := tests/run.sh $(RES)
# $(call SUMMARY,MAKE_STATUS,SUITES): summarise only SUITES (a single-suite run
# must not count what earlier suites left in $(RES)); `make check` passes none.
SUMMARY = $(if $(filter 0,$(KNIT_SUMMARY)),true,tests/summary.sh $(RES) $(1) $(2))
# $(call run-suite,NAME,PROGRAMS[,ARGS]): a suite of programs: clear NAME's
# results, run each program (with ARGS) as one result named after it, and
# summarise NAME (under a sanitizer NAME is e.g. thread-unit).
define run-suite
$(Q)$(RUN) --clear $(SP)$(1)
$(Q)for t in $(2); do $(RUN) $(SP)$(1) $$(basename $$t) -- $$t $(3); done
$(Q)$(call SUMMARY,0,$(SP)$(1))
endef
TEST_CFLAGS := -std=gnu11 $(OPT) -g $(WARN) $(SAN_FLAGS) $(CPPFLAGS_ALL) -Itests $(CFLAGS) $(LDFLAGS)
TEST_CXXFLAGS := -std=c++20 $(OPT) -g $(WARN) -fno-exceptions -fno-rtti $(SAN_FLAGS) $(CPPFLAGS_ALL) -Itests \
	$(CXXFLAGS) $(LDFLAGS)
# White-box tests link the static build of src/ and may call knit__ internals.
WHITEBOX_LIBS := $(LIB_TEST_A) $(LIB_LDLIBS) -lstdc++ -lm

# unit (cmocka): one program per tests/unit/test_*.c(pp); tests/unit/common/ is
# linked into each.
UNIT_COMMON := $(wildcard tests/unit/common/*.c tests/unit/common/*.cpp)
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c tests/unit/test_*.cpp))
UNIT_BINS := $(patsubst tests/unit/%,$(B)/tests/unit/%,$(basename $(UNIT_SRCS)))
$(B)/tests/unit/%: tests/unit/%.c $(UNIT_COMMON) $(LIB_TEST_A) $(wildcard tests/unit/*.h tests/unit/common/*.h tests/*.h arch/*.h arch/*/*.h) | $(B)/tests/unit
	$(call msg,TEST,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< $(filter %.c,$(UNIT_COMMON)) -o $@ -lcmocka $(WHITEBOX_LIBS)
$(B)/tests/unit/%: tests/unit/%.cpp $(UNIT_COMMON) $(LIB_TEST_A) $(wildcard tests/unit/*.h tests/unit/common/*.h tests/*.h arch/*.h arch/*/*.h) | $(B)/tests/unit
	$(call msg,TEST,$@)
	$(Q)$(CXX) $(TEST_CXXFLAGS) $< $(UNIT_COMMON) -o $@ -lcmocka $(WHITEBOX_LIBS)

check-unit: $(UNIT_BINS)
	$(call run-suite,unit,$(UNIT_BINS))

# api (Criterion): black-box against the shared library.
API_SRCS := $(sort $(wildcard tests/api/test_*.c))
API_BINS := $(patsubst tests/api/%.c,$(B)/tests/api/%,$(API_SRCS))
API_HELPERS := $(wildcard tests/api/helpers/*.c)
# Task libraries for process pools: tests/api/tasklib/NAME.c -> $(B)/tests/lib/NAME.so
API_TASKLIBS := $(patsubst tests/api/tasklib/%.c,$(B)/tests/lib/%.so,$(wildcard tests/api/tasklib/*.c))
$(B)/tests/lib/%.so: tests/api/tasklib/%.c $(LIB_LINK) include/knitting.h | $(B)/tests/lib
	$(call msg,SO,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared $< -o $@ -L$(B)/lib -Wl,-rpath,$(abspath $(B)/lib) -lknitting
# Built through a pattern rule for the tests: not intermediate files to delete.
.SECONDARY: $(API_TASKLIBS)
$(B)/tests/api/%: tests/api/%.c $(API_HELPERS) $(LIB_LINK) include/knitting.h $(wildcard tests/api/*.h) $(API_TASKLIBS) $(KW_BIN) | $(B)/tests/api
	$(call msg,TEST,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -DKT_BUILD_DIR='"$(abspath $(B))"' $< $(API_HELPERS) -o $@ -L$(B)/lib -Wl,-rpath,$(abspath $(B)/lib) -lknitting -lcriterion -lpthread -lm

check-api: $(API_BINS)
	$(call run-suite,api,$(API_BINS),--jobs=1 -q)

# stress: one program per tests/stress/*.c(pp), white-box, exit 0/1/77.
STRESS_SRCS := $(sort $(wildcard tests/stress/*.c tests/stress/*.cpp))
STRESS_BINS := $(patsubst tests/stress/%,$(B)/tests/stress/%,$(basename $(STRESS_SRCS)))
$(B)/tests/stress/%: tests/stress/%.c $(LIB_TEST_A) $(wildcard tests/stress/*.h) $(KW_BIN) $(API_TASKLIBS) | $(B)/tests/stress
	$(call msg,TEST,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@ $(WHITEBOX_LIBS)
$(B)/tests/stress/%: tests/stress/%.cpp $(LIB_TEST_A) $(wildcard tests/stress/*.h) | $(B)/tests/stress
	$(call msg,TEST,$@)
	$(Q)$(CXX) $(TEST_CXXFLAGS) $< -o $@ $(WHITEBOX_LIBS)

check-stress: $(STRESS_BINS)
	$(call run-suite,stress,$(STRESS_BINS))

# examples: programs against the shared library; demo.c is `make demo`; the
# .cpp ones use knitting.hpp (C++17).
EXAMPLE_SRCS := $(sort $(wildcard tests/examples/*.c tests/examples/*.cpp))
EXAMPLE_BINS := $(patsubst tests/examples/%,$(B)/tests/examples/%,$(basename $(EXAMPLE_SRCS)))
$(B)/tests/examples/%: tests/examples/%.c $(LIB_LINK) include/knitting.h | $(B)/tests/examples
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@ -L$(B)/lib -Wl,-rpath,$(abspath $(B)/lib) -lknitting -lpthread -lm
$(B)/tests/examples/%: tests/examples/%.cpp $(LIB_LINK) include/knitting.hpp include/knitting.h | $(B)/tests/examples
	$(call msg,CXX,$@)
	$(Q)$(CXX) -std=c++17 $(OPT) -g $(WARN) $(SAN_FLAGS) $(CPPFLAGS_ALL) $(CXXFLAGS) $(LDFLAGS) $< -o $@ \
		-L$(B)/lib -Wl,-rpath,$(abspath $(B)/lib) -lknitting -lpthread

# The snippets: every ```c block of README.md and the EXAMPLES program of
# every page of sections 3 and 7 (a page without one fails, but the private
# knit__worker_main(3)), extracted into $(B)/examples/, compiled through the
# uninstalled knitting.pc as the README says, and run (tests/examples/snippets.sh).
MAN_NO_EXAMPLES := man/man3/knit__worker_main.3 man/man3/knit__worker_seccomp.3
SNIPPET_SRCS := README.md $(filter-out $(MAN_NO_EXAMPLES),$(sort $(shell find man/man3 man/man7 -type f -name '*.[37]')))
check-examples: $(EXAMPLE_BINS) $(LIB_PC) $(KW_BIN)
	$(Q)$(RUN) --clear $(SP)examples
	$(Q)for t in $(EXAMPLE_BINS); do $(RUN) $(SP)examples $$(basename $$t) -- $$t; done
	$(Q)for s in $(SNIPPET_SRCS); do \
		$(RUN) $(SP)examples snippets-$$(basename $$s) -- tests/examples/snippets.sh $(B)/examples $(B)/pkgconfig $$s; \
	done
	$(Q)$(call SUMMARY,0,$(SP)examples)

# cxx: tests/cxx/test_*.cpp, programs over include/knitting.hpp and the shared
# library, each built eight ways: g++ and clang++, C++17 and C++20, with and
# without exceptions, always with -Wall -Wextra -Werror -pedantic (that the
# header compiles cleanly is part of what is checked). The build name says
# how: test_hpp-gcc-17-exc, test_hpp-clang-20-noexc ...
CLANGXX ?= clang++
CXXT_SRCS := $(sort $(wildcard tests/cxx/test_*.cpp))
CXXT_VARIANTS := $(foreach c,gcc clang,$(foreach s,17 20,$(foreach e,exc noexc,$(c)-$(s)-$(e))))
CXXT_BINS := $(foreach t,$(CXXT_SRCS:tests/cxx/%.cpp=%),$(foreach v,$(CXXT_VARIANTS),$(B)/tests/cxx/$(t)-$(v)))
# $(call CXXT_RULE,COMPILER-NAME,COMPILER,STD,EXC)
define CXXT_RULE
$(B)/tests/cxx/%-$(1)-$(3)-$(4): tests/cxx/%.cpp include/knitting.hpp include/knitting.h $(LIB_LINK) $(KW_BIN) $(API_TASKLIBS) | $(B)/tests/cxx
	$$(call msg,CXX,$$@)
	$$(Q)$(2) -std=c++$(3) $(if $(filter noexc,$(4)),-fno-exceptions) $$(OPT) -g -Wall -Wextra -Werror -pedantic \
		$$(CPPFLAGS_ALL) $(if $(filter gcc,$(1)),$$(CXXFLAGS)) $$(LDFLAGS) -DKT_BUILD_DIR='"$$(abspath $$(B))"' $$< -o $$@ \
		-L$$(B)/lib -Wl,-rpath,$$(abspath $$(B)/lib) -lknitting -lpthread
endef
$(foreach s,17 20,$(foreach e,exc noexc,$(eval $(call CXXT_RULE,gcc,$(CXX),$(s),$(e))) \
	$(eval $(call CXXT_RULE,clang,$(CLANGXX),$(s),$(e)))))

check-cxx: $(CXXT_BINS)
	$(call run-suite,cxx,$(CXXT_BINS))

# model: every tests/model/*.pml checked exhaustively by spin, MODEL_JOBS
# at a time (each pan is one thread of at most 2 GiB: -DMEMLIM, check.sh;
# each model has its own result files and work folder). The three longest
# go first, so that the runs end together instead of behind the last long
# one.
MODEL_SRCS := $(sort $(wildcard tests/model/*.pml))
MODEL_LONG := $(filter $(addprefix tests/model/,syncline.pml steal_claim.pml steal_claim_death.pml),$(MODEL_SRCS))
MODEL_JOBS ?= 2
check-model:
	$(Q)$(RUN) --clear $(SP)model
	$(Q)printf '%s\n' $(MODEL_LONG) $(filter-out $(MODEL_LONG),$(MODEL_SRCS)) | \
		xargs -P $(MODEL_JOBS) -I{} sh -c '$(RUN) $(SP)model "$$(basename "$$1" .pml)" -- tests/model/check.sh "$$1" $(B)/model' sh {}
	$(Q)$(call SUMMARY,0,$(SP)model)

# fuzz (libFuzzer, clang): each tests/fuzz/fuzz_*.cpp for a bounded time.
FUZZ_SECONDS ?= 30
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.cpp))
FUZZ_BINS := $(patsubst tests/fuzz/%.cpp,build/fuzz/%,$(FUZZ_SRCS))
FUZZ_FLAGS := -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-exceptions -fno-rtti $(DCHECK_FLAGS) \
	-fno-sanitize-recover=all $(CPPFLAGS_ALL) -Itests
# src/cxxrt.cpp is left out: its malloc-based operator delete would free
# libFuzzer's own operator-new allocations (ASan: alloc-dealloc-mismatch).
build/fuzz/%: tests/fuzz/%.cpp $(LIB_SRCS) $(wildcard src/*.h arch/*.h arch/*/*.h) $(SYSNAMES) | build/fuzz
	$(call msg,FUZZ,$@)
	$(Q)clang++ $(FUZZ_FLAGS) $< $(filter-out src/cxxrt.cpp,$(LIB_SRCS)) -o $@ $(LIB_LDLIBS)

check-fuzz: $(FUZZ_BINS)
	$(Q)$(RUN) --clear $(SP)fuzz
	$(Q)for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p build/fuzz/corpus-$$n; \
		$(RUN) $(SP)fuzz $$n -- $$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix=build/fuzz/$$n- \
		build/fuzz/corpus-$$n tests/fuzz/corpus/$$n; done
	$(Q)$(call SUMMARY,0,$(SP)fuzz)

# cross: arch/ (and the protocol code) for aarch64 and riscv64 under qemu-user.
CROSS_TARGETS := aarch64:aarch64-linux-gnu-gcc:: aarch64-lse:aarch64-linux-gnu-gcc:-march=armv8.1-a:max \
	riscv64:riscv64-linux-gnu-gcc::
CROSS_SRCS := $(sort $(wildcard tests/cross/test_*.c))
check-cross:
	$(Q)$(RUN) --clear $(SP)cross
	$(Q)for cc in aarch64-linux-gnu-gcc riscv64-linux-gnu-gcc; do \
		$(RUN) $(SP)cross $${cc%%-*}-seccomp-policy -- tests/cross/seccomp-policy.sh $$cc; \
	done
	$(Q)for spec in $(CROSS_TARGETS); do \
		IFS=: read -r name cc march cpu <<< "$$spec"; \
		arch=$${name%%-*}; \
		for src in $(CROSS_SRCS); do \
			t=$$(basename $$src .c); out=build/cross/$$name/$$t; mkdir -p build/cross/$$name; \
			$(RUN) $(SP)cross $$name-$$t -- tests/cross/build-and-run.sh "$$cc" "$$march" "$$cpu" "$$arch" $$src $$out; \
		done; \
	done
	$(Q)$(call SUMMARY,0,$(SP)cross)

# ffi: foreign callers drive the shared library.
FFI_SRCS := $(sort $(wildcard tests/ffi/test_*.py))
check-ffi: $(LIB_LINK)
	$(Q)$(RUN) --clear $(SP)ffi
	$(Q)for t in $(FFI_SRCS); do KNIT_LIB=$(abspath $(LIB_SO)) $(RUN) $(SP)ffi $$(basename $$t .py) -- python3 $$t; done
	$(Q)$(call SUMMARY,0,$(SP)ffi)

# python: the knitting package (tools/python) under pytest, one result per
# tests/python/test_*.py. Debian's pytest belongs to /usr/bin/python3, which
# may not be the python3 first on PATH (pyenv); PYTEST_PYTHON picks it.
PYTEST_PYTHON ?= $(if $(wildcard /usr/bin/python3),/usr/bin/python3,python3)
PY_TESTS := $(sort $(wildcard tests/python/test_*.py))
check-python: $(LIB_LINK) $(KW_BIN)
	$(Q)$(RUN) --clear $(SP)python
	$(Q)for t in $(PY_TESTS); do KNIT_LIB=$(abspath $(LIB_SO)) MAKE="$(MAKE)" $(RUN) $(SP)python \
		$$(basename $$t .py) -- $(PYTEST_PYTHON) tests/python/run_pytest.py $$t; done
	$(Q)$(call SUMMARY,0,$(SP)python)

# abi-check: only knit_ symbols leave the .so, no C++ symbol, no libstdc++;
# the dpkg symbols file matches; every public struct keeps its LP64 layout
# (abi/layout.c on x86-64, aarch64, riscv64); abidiff against the committed
# baseline finds no change but a size-prefixed struct growing at its end;
# and the abidiff check is shown to fail on changed layouts and symbols.
ABI_BASELINE := abi/libknitting.abi
ABIDW_FLAGS := --no-corpus-path --no-comp-dir-path
abi-check: $(LIB_LINK)
	$(Q)$(RUN) --clear $(SP)abi
	$(Q)$(RUN) $(SP)abi exports -- abi/check-exports.sh $(LIB_SO) abi/libknitting.map
	$(Q)$(RUN) $(SP)abi symbols -- abi/check-symbols.sh $(LIB_SO) abi/libknitting.symbols
	$(Q)$(RUN) $(SP)abi header -- abi/check-header.sh
	$(Q)$(RUN) $(SP)abi layout -- abi/check-layout.sh
	$(Q)$(RUN) $(SP)abi abidiff -- abi/check-abi.sh $(ABI_BASELINE) $(LIB_SO) include abi/knitting.abignore
	$(Q)$(RUN) $(SP)abi abidiff-selftest -- abi/check-abi-selftest.sh $(ABI_BASELINE) $(B)/obj/src
	$(Q)$(call SUMMARY,0,$(SP)abi)

# abi-baseline: rewrite the abidiff baseline from this build. Only on
# purpose: when a release adds symbols (in a new node of the map, with the
# symbols file) or grows a size-prefixed struct; review the diff it makes.
abi-baseline: $(LIB_LINK)
	abidw $(ABIDW_FLAGS) $(LIB_SO) > $(ABI_BASELINE)

# man-check: every exported function has a page; every page is mandoc-clean
# and its footer names $(VERSION); the tools' --version print $(VERSION);
# the seccomp policy the pages list is the filter's (tests/seccomp-doc.sh).
# man-version: write $(VERSION) into every page's footer (after a version
# bump in include/knitting.h; man-check fails until then).
man-check: $(LIB_LINK)
	$(Q)$(RUN) --clear $(SP)man
	$(Q)$(RUN) $(SP)man pages -- man/check.sh $(LIB_SO) $(MAN_TOOLS)
	$(Q)$(RUN) $(SP)man seccomp-policy -- tests/seccomp-doc.sh
	$(Q)$(call SUMMARY,0,$(SP)man)
man-version:
	$(Q)find man -type f -name '*.[1-8]' -exec sed -i \
		's/^\(\.TH [^ ]* [^ ]* [^ ]* \)"libknitting [^"]*"/\1"libknitting $(VERSION)"/' {} +

# check-install: make install into a stage, build and run consumers from it
# (pkg-config shared and static, CMake find_package), make uninstall.
check-install: $(LIB_LINK) $(LIB_A)
	$(Q)$(RUN) --clear $(SP)install
	$(Q)MAKE="$(MAKE)" $(RUN) $(SP)install stage -- tests/install/check.sh $(LIB_SO)
	$(Q)$(call SUMMARY,0,$(SP)install)

# style: the floors of src/ (tests/layering.sh reads src/README.md) and the
# format of every C and C++ file (.clang-format; the generated vmlinux.h is
# left as bpftool wrote it). `make format` rewrites them, `make format-check`
# only looks.
FORMAT_SRCS = $(shell git ls-files '*.c' '*.cpp' '*.h' '*.hpp' 2>/dev/null | grep -v '/vmlinux/')
format:
	$(Q)clang-format --style=file -i $(FORMAT_SRCS)
format-check:
	$(Q)tests/format-check.sh $(FORMAT_SRCS)
check-style:
	$(Q)$(RUN) --clear $(SP)style
	$(Q)$(RUN) $(SP)style layering -- tests/layering.sh src
	$(Q)$(RUN) $(SP)style format -- tests/format-check.sh $(FORMAT_SRCS)
	$(Q)$(call SUMMARY,0,$(SP)style)

CHECK_SUITES := check-style check-unit check-api check-stress check-examples check-model check-fuzz \
	check-cross check-ffi check-python abi-check man-check check-install check-sanitizers
CHECK_SUITES += check-cxx

# ---- knit-bench: libknitting against its floors and peers (tools/knit-bench) -----
# A C++ tool: it may link libstdc++ and the peers. Peers are compiled in only
# when their headers are there (__has_include); oneTBB also needs its library,
# probed here only when knit-bench is built. `make check` runs the --quick
# smoke test (counts, never times) with knit-bench's options, --json metadata
# and --plot checked (tools/knit-bench/check.sh); `make bench` installs the peers, builds
# and runs the full comparison (under 5 minutes on 2 CPUs).
KB_BIN := $(B)/tools/knit-bench
MAN_TOOLS += $(KB_BIN)
KB_SRCS := $(sort $(wildcard tools/knit-bench/*.cpp))
KB_HAVE_TBB = $(shell test -e /usr/include/oneapi/tbb/task_arena.h && \
	echo 'int main(){}' | $(CXX) -x c++ - -ltbb -o /dev/null 2>/dev/null && echo 1)
KB_OUT := $(B)/bench
$(B)/tools/knit-bench.flags: FORCE | $(B)/tools
	$(Q)f='$(if $(KB_HAVE_TBB),-DKB_TBB_LINKED=1 -ltbb)'; echo "$$f" | cmp -s - $@ || echo "$$f" > $@
# The protocol floors (lock2_echo.cpp) use the runtime's internal lock2
# classes, which the shared library hides: they come from the archive of the
# library's own objects (LIB_INT_A, not the test build), after -lknitting, so
# only the lock2 / codec / arena / region objects are pulled in and every
# knit_* call still binds to the .so.
# The commit knit-bench reports in its --json (rewritten only when it changes).
$(B)/tools/knit-bench-commit.h: FORCE | $(B)/tools
	$(Q)c=$$(git describe --always --dirty 2>/dev/null || echo unknown); \
		printf '#define KB_COMMIT "%s"\n' "$$c" | cmp -s - $@ || printf '#define KB_COMMIT "%s"\n' "$$c" > $@
$(KB_BIN): $(KB_SRCS) tools/knit-bench/bench.h $(LIB_LINK) $(LIB_INT_A) include/knitting.h $(B)/tools/knit-bench.flags \
		$(B)/tools/knit-bench-commit.h | $(B)/tools
	$(call msg,CXX,$@)
	$(Q)$(CXX) -std=c++20 $(OPT) -g $(WARN) $(SAN_FLAGS) $(CPPFLAGS_ALL) -I$(B)/tools $(CXXFLAGS) $(LDFLAGS) $(KB_SRCS) -o $@ \
		-L$(B)/lib -Wl,-rpath,$(abspath $(B)/lib) -lknitting $(LIB_INT_A) $$(cat $(B)/tools/knit-bench.flags) -lpthread
# The process-pool cases' task library, beside knit-bench.
KB_TASKS := $(B)/tools/knit-bench-tasks.so
$(KB_TASKS): tools/knit-bench/tasks/bench_tasks.c $(LIB_LINK) include/knitting.h | $(B)/tools
	$(call msg,SO,$@)
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -fPIC -shared $< -o $@ -L$(B)/lib -Wl,-rpath,$(abspath $(B)/lib) -lknitting
$(KB_BIN): $(KB_TASKS) $(KW_BIN)
deps-bench:
	$(Q)sh tools/deps.sh --bench
bench: deps-bench
	$(Q)$(MAKE) --no-print-directory $(KB_BIN)
	$(Q)mkdir -p $(KB_OUT)
	$(Q)$(KB_BIN) --json $(KB_OUT)/knit-bench.json --plot $(KB_OUT)/knit-bench.png
check-bench: $(KB_BIN)
	$(Q)$(RUN) --clear $(SP)bench
	$(Q)$(RUN) $(SP)bench tool -- tools/knit-bench/check.sh $(KB_BIN)
	$(Q)$(call SUMMARY,0,$(SP)bench)
CHECK_SUITES += check-bench
FORCE:

# ---- knit-trace: the eBPF tool (libbpf CO-RE) and its end-to-end test ----------
# The kernel types the BPF program needs come from the tree
# (tools/knit-trace/vmlinux/vmlinux.h, one section per architecture), not from
# the build host's BTF: the tool builds anywhere clang and bpftool (for the
# skeleton) are, and CO-RE relocates against the running kernel's BTF at load
# time (knit-trace checks for it and says so). Without clang or bpftool the
# tool is not built and check-trace reports a skip.
BPFTOOL := $(or $(BPFTOOL),$(shell command -v bpftool 2>/dev/null || ls /usr/sbin/bpftool 2>/dev/null))
KT_VMLINUX := tools/knit-trace/vmlinux/vmlinux.h
KT_OUT := build/knit-trace
KT_BIN := build/tools/knit-trace
KT_BPF_ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(patsubst riscv64,riscv,$(ARCH))))
KT_BPF_FLAGS = -g -O2 -target bpf -mcpu=v3 -Itools/knit-trace/vmlinux -Itools/knit-trace \
	-I$(MULTIARCH_INC) -Wall -Werror
HAVE_KT := $(if $(and $(HAVE_CLANG),$(BPFTOOL)),1)
ifeq ($(HAVE_KT),1)
TOOLS += $(KT_BIN)
MAN_TOOLS += $(KT_BIN)
endif
$(KT_OUT)/knit-trace.bpf.o: tools/knit-trace/knit-trace.bpf.c tools/knit-trace/knit-trace.h $(KT_VMLINUX) | $(KT_OUT)
	$(call msg,BPF,$@)
	$(Q)clang $(KT_BPF_FLAGS) -D__TARGET_ARCH_$(KT_BPF_ARCH) -c $< -o $@
# The BPF program builds for every architecture vmlinux.h has a section for
# (part of check-trace; the objects are thrown away).
$(KT_OUT)/bpf-arches.ok: tools/knit-trace/knit-trace.bpf.c tools/knit-trace/knit-trace.h $(KT_VMLINUX) | $(KT_OUT)
	$(Q)for a in x86 arm64 riscv; do \
		clang $(KT_BPF_FLAGS) -D__TARGET_ARCH_$$a -c $< -o $(KT_OUT)/knit-trace.$$a.bpf.o || exit 1; \
	done; touch $@
$(KT_OUT)/knit-trace.skel.h: $(KT_OUT)/knit-trace.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name knit_trace_bpf > $@
$(KT_BIN): tools/knit-trace/knit-trace.c tools/knit-trace/knit-trace.h src/trace.h $(KT_OUT)/knit-trace.skel.h \
		include/knitting.h | build/tools
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 $(OPT) -g $(WARN) -I. -I$(KT_OUT) -Itools/knit-trace -DKT_VERSION='"$(VERSION)"' \
		$(CPPFLAGS) $(CFLAGS) $(LDFLAGS) \
		$< -o $@ -lbpf -lelf -lz

# check-trace: knit-trace against a probe fixture (exact known counts) and a
# live pool (counts equal to knit_pool_stats) of each topology - lanes, steal
# (the default for 2..31 workers), lanes with an inline lane - traced whole
# and with --lane 0; a process pool (knit-worker processes, followed by
# knit-trace -p HOST) whole and with --lane 0, one whose worker is killed
# and respawned mid-trace, and one traced only once its workers run (found
# by knit-trace among the host's children); the text report of some of them
# (banner, the pool's kind, synchronous and ticketed calls, worker process
# deaths by cause); and knit-trace as a non-root uid
# by capability (setpriv).
# Needs root; skips only where the kernel refuses BPF.
$(B)/tests/trace/trace_fixture: tests/trace/trace_fixture.c src/trace.h | $(B)/tests/trace
	$(call msg,TEST,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@ -lpthread
$(B)/tests/trace/trace_pool: tests/trace/trace_pool.c $(LIB_LINK) include/knitting.h | $(B)/tests/trace
	$(call msg,TEST,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@ -L$(B)/lib -Wl,-rpath,$(abspath $(B)/lib) -lknitting -lpthread
check-trace: $(B)/tests/trace/trace_fixture $(B)/tests/trace/trace_pool $(LIB_LINK) $(if $(HAVE_KT),$(KT_BIN)) \
		$(KW_BIN) $(B)/tests/lib/proc_tasks.so $(B)/tests/lib/proc_sandbox.so
	$(Q)$(RUN) --clear $(SP)trace
	$(Q)$(if $(HAVE_KT),$(RUN) $(SP)trace bpf-arches -- $(MAKE) --no-print-directory -B $(KT_OUT)/bpf-arches.ok)
	$(Q)$(RUN) $(SP)trace fixture -- tests/trace/run.sh $(KT_BIN) $(B)/tests/trace/trace_fixture --lib
	$(Q)for t in lanes steal inline proc-lanes proc-steal proc-respawn proc-sandbox; do \
		$(RUN) $(SP)trace pool-$$t -- tests/trace/run.sh $(KT_BIN) $(B)/tests/trace/trace_pool --arg $$t; \
	done
	$(Q)for t in lanes steal proc-lanes proc-steal; do \
		$(RUN) $(SP)trace pool-$$t-lane0 -- tests/trace/run.sh $(KT_BIN) $(B)/tests/trace/trace_pool --arg $$t --lane 0; \
	done
	$(Q)$(RUN) $(SP)trace pool-proc-late -- tests/trace/run.sh $(KT_BIN) $(B)/tests/trace/trace_pool --late --arg proc-late
	$(Q)for t in lanes steal inline proc-steal proc-respawn proc-sandbox; do \
		$(RUN) $(SP)trace text-$$t -- tests/trace/run.sh $(KT_BIN) $(B)/tests/trace/trace_pool --text --arg $$t; \
	done
	$(Q)$(RUN) $(SP)trace text-proc-late -- tests/trace/run.sh $(KT_BIN) $(B)/tests/trace/trace_pool --late --text --arg proc-late
	$(Q)$(RUN) $(SP)trace caps -- tests/trace/caps.sh $(KT_BIN) $(abspath $(LIB_SO))
	$(Q)$(call SUMMARY,0,$(SP)trace)
CHECK_SUITES += check-trace

# The concurrency tests again under ThreadSanitizer (builtins layer), and the
# white-box and API tests under ASan+UBSan, recorded in the same results.
check-sanitizers:
	$(Q)st=0; \
	$(MAKE) --no-print-directory -k SANITIZE=thread RES=$(abspath $(RES)) KNIT_SUMMARY=0 \
		check-unit check-stress || st=1; \
	$(MAKE) --no-print-directory -k SANITIZE=address RES=$(abspath $(RES)) KNIT_SUMMARY=0 \
		check-unit check-api || st=1; \
	$(call SUMMARY,$$st,thread-unit thread-stress address-unit address-api) && exit $$st

# The packages first, then (one make, so -j cannot start a build before
# they are there) everything `make` builds - build/pkgconfig/knitting.pc
# among it - and every suite.
check: deps
	$(Q)rm -rf $(RES) && mkdir -p $(RES)
	$(Q)st=0; $(MAKE) --no-print-directory -k all $(CHECK_SUITES) KNIT_SUMMARY=0 || st=$$?; \
		tests/summary.sh $(RES) $$st

# ---- demo --------------------------------------------------------------------------
# The demo's packages only (tools/deps.sh --demo: no root when they are
# there), then the library, the uninstalled knitting.pc the README's compile
# lines use, and the demo.
demo: deps-demo
	$(Q)$(MAKE) --no-print-directory $(B)/tests/examples/demo $(LIB_PC)
	$(Q)$(B)/tests/examples/demo

# ---- install -----------------------------------------------------------------------
# The real file carries the full version; the SONAME link is what programs load,
# the unversioned link is what -lknitting finds at build time. The CMake package
# files find the prefix relative to their own place, so a staged install
# (DESTDIR) is usable with CMAKE_PREFIX_PATH pointing at the stage.
MAN_PAGES := $(sort $(wildcard man/man1/*.1 man/man3/*.3 man/man7/*.7 man/man8/*.8))
CMAKE_REL_PREFIX = $(shell realpath -m --relative-to=$(cmakedir) $(prefix))
CMAKE_REL_LIBDIR = $(shell realpath -m --relative-to=$(prefix) $(libdir))
CMAKE_REL_INCDIR = $(shell realpath -m --relative-to=$(prefix) $(includedir))
install: $(LIB_LINK) $(LIB_A) $(KW_BIN) install-python
	install -d $(DESTDIR)$(libdir) $(DESTDIR)$(includedir) $(DESTDIR)$(libdir)/pkgconfig \
		$(DESTDIR)$(cmakedir)
	install -m 644 $(LIB_SO) $(DESTDIR)$(libdir)/libknitting.so.$(VERSION)
	ln -sfn libknitting.so.$(VERSION) $(DESTDIR)$(libdir)/$(SONAME)
	ln -sfn $(SONAME) $(DESTDIR)$(libdir)/libknitting.so
	install -m 644 $(LIB_A) $(DESTDIR)$(libdir)/libknitting.a
	install -m 644 include/knitting.h $(DESTDIR)$(includedir)/knitting.h
	install -m 644 include/knitting.hpp $(DESTDIR)$(includedir)/knitting.hpp
	sed -e 's|@prefix@|$(prefix)|' -e 's|@libdir@|$(libdir)|' \
		-e 's|@includedir@|$(includedir)|' -e 's|@VERSION@|$(VERSION)|' \
		abi/knitting.pc.in > $(DESTDIR)$(libdir)/pkgconfig/knitting.pc
	sed -e 's|@REL_PREFIX@|$(CMAKE_REL_PREFIX)|' -e 's|@REL_LIBDIR@|$(CMAKE_REL_LIBDIR)|' \
		-e 's|@REL_INCDIR@|$(CMAKE_REL_INCDIR)|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|@SONAME@|$(SONAME)|' \
		abi/knittingConfig.cmake.in > $(DESTDIR)$(cmakedir)/knittingConfig.cmake
	sed -e 's|@VERSION@|$(VERSION)|' \
		abi/knittingConfigVersion.cmake.in > $(DESTDIR)$(cmakedir)/knittingConfigVersion.cmake
	install -d $(DESTDIR)$(pkglibexecdir)
	install -m 755 $(KW_BIN) $(DESTDIR)$(pkglibexecdir)/knit-worker
	if [ -x $(KT_BIN) ]; then install -d $(DESTDIR)$(sbindir) && \
		install -m 755 $(KT_BIN) $(DESTDIR)$(sbindir)/knit-trace; fi
	for f in $(MAN_PAGES); do s=$${f##*.}; install -d $(DESTDIR)$(mandir)/man$$s && \
		cp -P $$f $(DESTDIR)$(mandir)/man$$s/; done
	@$(if $(DESTDIR),,echo "Installed $(SONAME) in $(libdir): run ldconfig (as root) so that programs find it.")

# Removes exactly the files install put and the directories that are ours
# alone ($(cmakedir), $(pkglibexecdir)); shared directories such as $(libdir)
# stay.
uninstall: uninstall-python
	rm -f $(addprefix $(DESTDIR)$(libdir)/,libknitting.so.$(VERSION) $(SONAME) \
		libknitting.so libknitting.a pkgconfig/knitting.pc)
	rm -f $(DESTDIR)$(includedir)/knitting.h $(DESTDIR)$(includedir)/knitting.hpp $(DESTDIR)$(sbindir)/knit-trace
	rm -f $(DESTDIR)$(pkglibexecdir)/knit-worker
	if [ -d $(DESTDIR)$(pkglibexecdir) ]; then rmdir $(DESTDIR)$(pkglibexecdir); fi
	rm -f $(DESTDIR)$(cmakedir)/knittingConfig.cmake $(DESTDIR)$(cmakedir)/knittingConfigVersion.cmake
	if [ -d $(DESTDIR)$(cmakedir) ]; then rmdir $(DESTDIR)$(cmakedir); fi
	rm -f $(foreach f,$(MAN_PAGES),$(DESTDIR)$(mandir)/man$(subst .,,$(suffix $(f)))/$(notdir $(f)))

clean:
	rm -rf build

# The Python package goes to PYTHONDIR: for prefix=/usr Debian's directory for
# packaged modules (/usr/lib/python3/dist-packages), else $(PYTHON)'s purelib
# directory under $(prefix) (/usr/local/lib/pythonX.Y/site-packages), so an
# install never writes outside $(prefix); set PYTHONDIR to the directory your
# interpreter searches. It needs no build.
PYTHON ?= python3
PYTHONDIR ?= $(if $(filter /usr,$(prefix)),/usr/lib/python3/dist-packages,$(shell $(PYTHON) -c \
	'import sysconfig; print(sysconfig.get_path("purelib", vars={"base": "$(prefix)", "platbase": "$(prefix)"}))'))
PY_PKG := $(sort $(wildcard tools/python/knitting/*.py)) tools/python/knitting/py.typed
install-python:
	$(if $(PYTHONDIR),,$(error PYTHONDIR is empty: set it, or PYTHON to an interpreter))
	install -d $(DESTDIR)$(PYTHONDIR)/knitting
	install -m 644 $(PY_PKG) $(DESTDIR)$(PYTHONDIR)/knitting/
uninstall-python:
	$(if $(PYTHONDIR),,$(error PYTHONDIR is empty: set it, or PYTHON to an interpreter))
	rm -f $(addprefix $(DESTDIR)$(PYTHONDIR)/knitting/,$(notdir $(PY_PKG)))
	rm -rf $(DESTDIR)$(PYTHONDIR)/knitting/__pycache__
	if [ -d $(DESTDIR)$(PYTHONDIR)/knitting ]; then rmdir $(DESTDIR)$(PYTHONDIR)/knitting; fi

# ---- the rules over what every section added ---------------------------------
tools: $(TOOLS)
man-check: $(MAN_TOOLS)

# ---- build directories: every rule above names its own as order-only ----------
BUILD_DIRS := $(sort $(B) $(B)/gen $(B)/obj $(B)/obj/src $(B)/obj-test/src $(B)/lib $(B)/pkgconfig $(B)/libexec/knitting \
	$(B)/tests/unit $(B)/tests/lib $(B)/tests/api $(B)/tests/stress $(B)/tests/examples $(B)/tests/cxx \
	$(B)/tests/trace $(B)/tools build/fuzz build/tools $(KT_OUT))
$(BUILD_DIRS):
	$(Q)mkdir -p $@

.PHONY: abi-baseline all tools format format-check deps deps-demo deps-bench bench check demo install uninstall install-python uninstall-python clean abi-check man-check man-version FORCE $(CHECK_SUITES)
.DELETE_ON_ERROR:
