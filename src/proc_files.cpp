// SPDX-License-Identifier: MIT
// src/proc_files.cpp - the files a process pool uses: the knit-worker
// program (where the install put it, or what the caller named) and the task
// library (checked, loaded, its table hashed for the workers to compare),
// each refused with a message that names the file and why
// (src/proc.h).
#include "src/common.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/error.h"
#include "src/proc.h"
#include "src/task.h"

namespace knit::detail {

namespace {

uint64_t fnv(uint64_t h, const void *d, size_t n)
{
	const uint8_t *b = static_cast<const uint8_t *>(d);
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001B3ull;
	return h;
}

} // namespace

char *dup_str(const char *s)
{
	const size_t n = strlen(s) + 1;
	char *d = static_cast<char *>(malloc(n));
	if (d != nullptr)
		memcpy(d, s, n);
	return d;
}

// The install's place of knit-worker, compiled in by the Makefile from its
// install variables: KNIT_WORKER_REL is $(pkglibexecdir)/knit-worker
// relative to $(libdir); KNIT_WORKER_ABS is its absolute path, given only to
// the objects of the installed libknitting.a (empty in the shared library).
#ifndef KNIT_WORKER_REL
#define KNIT_WORKER_REL "knitting/knit-worker"
#endif
#ifndef KNIT_WORKER_ABS
#define KNIT_WORKER_ABS ""
#endif

// The default knit-worker (malloc'd; null only when out of memory): the first
// executable file of
//  1. KNIT_WORKER_REL from the directory of the library file, its links
//     resolved: an installed library finds its own worker, in place, staged
//     (DESTDIR) or moved with its libdir alike;
//  2. ../libexec/knitting/knit-worker from there: the build tree;
//  3. KNIT_WORKER_ABS: a program linked with libknitting.a has no library
//     file to start from, only the install path.
// With none, the first candidate, so the caller names what is missing.
char *default_worker_path()
{
	static const char kBuildRel[] = "../libexec/knitting/knit-worker";
	static const char kInstalled[] = KNIT_WORKER_ABS;
	Dl_info info;
	struct link_map *lm = nullptr;
	char *file = nullptr;
	// The main program's link map has an empty name: linked from the archive.
	if (dladdr1(reinterpret_cast<void *>(&task_table_hash), &info,
		    reinterpret_cast<void **>(&lm), RTLD_DL_LINKMAP) != 0 &&
	    lm != nullptr && lm->l_name != nullptr && lm->l_name[0] != 0) {
		file = realpath(lm->l_name, nullptr);
		if (file == nullptr && (file = dup_str(lm->l_name)) == nullptr)
			return nullptr;
	}
	const char *cand[3];
	char *owned[2] = {nullptr, nullptr};
	size_t n = 0;
	if (file != nullptr) {
		const char *slash = strrchr(file, '/');
		const size_t dir = slash ? (size_t)(slash - file) : 1;
		const char *rel[2] = {KNIT_WORKER_REL, kBuildRel};
		for (int i = 0; i < 2; i++) {
			const size_t len = strlen(rel[i]);
			char *out = static_cast<char *>(malloc(dir + 1 + len + 1));
			if (out == nullptr)
				break;
			memcpy(out, slash ? file : ".", dir);
			out[dir] = '/';
			memcpy(out + dir + 1, rel[i], len + 1);
			cand[n++] = owned[i] = out;
		}
		free(file);
		if (n < 2) {
			free(owned[0]);
			return nullptr;
		}
	}
	if (kInstalled[0] != 0 || n == 0)
		cand[n++] = kInstalled;
	size_t pick = 0;
	for (size_t i = 0; i < n; i++)
		if (access(cand[i], X_OK) == 0) {
			pick = i;
			break;
		}
	char *out = pick < 2 && owned[pick] != nullptr ? owned[pick] : dup_str(cand[pick]);
	for (int i = 0; i < 2; i++)
		if (owned[i] != out)
			free(owned[i]);
	return out;
}

uint64_t task_table_hash(const TaskEntry *t, uint32_t n)
{
	uint64_t h = fnv(0xCBF29CE484222325ull, &n, sizeof n);
	for (uint32_t i = 0; i < n; i++) {
		h = fnv(h, t[i].name, strlen(t[i].name) + 1);
		h = fnv(h, &t[i].timeout_ms, sizeof t[i].timeout_ms);
		h = fnv(h, &t[i].flags, sizeof t[i].flags);
	}
	return h;
}

// Whether `path` names a regular file we may read (exec: execute): 0, or
// -KNIT_ENOENT / -KNIT_EACCES / -KNIT_EINVAL with the message recorded,
// which names `what`, the path and, for a relative path, the working
// directory it was resolved against.
int proc_file_check(const char *what, const char *path, bool exec)
{
	struct stat st;
	const bool found = stat(path, &st) == 0;
	const int e = found ? 0 : errno;
	if (!found || !S_ISREG(st.st_mode) || access(path, exec ? X_OK : R_OK) != 0) {
		const int code = found || e == EACCES          ? -KNIT_EACCES
				 : e == ENOENT || e == ENOTDIR ? -KNIT_ENOENT
							       : -KNIT_EINVAL;
		const int why = !found ? e : !S_ISREG(st.st_mode) ? 0 : errno;
		const char *not_what = !found                 ? ""
				       : !S_ISREG(st.st_mode) ? ": not a regular file"
				       : exec                 ? ": not executable"
							      : ": not readable";
		if (path[0] != '/') {
			char cwd[PATH_MAX];
			if (getcwd(cwd, sizeof cwd) == nullptr)
				strcpy(cwd, "(unknown)");
			return error_set_errno(
				code, why, "relative %s path \"%s\" resolved against cwd \"%s\"%s",
				what, path, cwd, not_what);
		}
		return error_set_errno(code, why, "%s \"%s\"%s", what, path, not_what);
	}
	return 0;
}

int proc_load_tasks(Pool *p, const char *path, void **handle, LibraryHooks *hooks)
{
	*handle = nullptr;
	if (hooks != nullptr)
		hooks->init = nullptr, hooks->fini = nullptr;
	// A path with a slash names a file (relative ones from the working
	// directory): whether it is there and readable is ours to say. A bare
	// name is searched in the library path by dlopen.
	const bool bare = strchr(path, '/') == nullptr;
	if (!bare) {
		const int rc = proc_file_check("task library", path, false);
		if (rc != 0)
			return rc;
	}
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (dl == nullptr) {
		const char *why = dlerror();
		if (why == nullptr)
			why = "unknown error";
		if (!bare)
			return error_set(-KNIT_EINVAL, "task library \"%s\": dlopen: %s", path,
					 why);
		// glibc's message for a name not found in the search path:
		// "NAME: cannot open shared object file: <strerror(ENOENT)>";
		// one that starts with another name is a dependency's.
		char buf[128];
		const char *enoent = strerror_r(ENOENT, buf, sizeof buf);
		const size_t n = strlen(path), w = strlen(why), m = strlen(enoent);
		const bool ours = strncmp(why, path, n) == 0 && why[n] == ':' && w >= m &&
				  strcmp(why + w - m, enoent) == 0;
		return error_set(ours ? -KNIT_ENOENT : -KNIT_EINVAL,
				 "task library \"%s\": dlopen: %s (a name without a slash is "
				 "searched in the library "
				 "path, not in the working directory)",
				 path, why);
	}
	const knit_task_library_t *lib =
		static_cast<const knit_task_library_t *>(dlsym(dl, KNIT_TASK_LIBRARY_SYMBOL));
	int rc = 0;
	if (lib == nullptr) {
		rc = error_set(-KNIT_EINVAL,
			       "task library \"%s\" has no symbol " KNIT_TASK_LIBRARY_SYMBOL, path);
	} else if (lib->size > sizeof(knit_task_library_t)) {
		// As every size field: a larger one is a newer library's
		// structure, whose fields past ours we would ignore.
		rc = error_set(-KNIT_EVERSION,
			       "task library \"%s\": " KNIT_TASK_LIBRARY_SYMBOL
			       " has size %u, larger than this library "
			       "knows (%zu): built against a newer libknitting",
			       path, lib->size, sizeof(knit_task_library_t));
	} else if (!(lib->size == KNIT_TASK_LIBRARY_V1_SIZE && lib->version == 1) &&
		   !(lib->size == sizeof(knit_task_library_t) &&
		     lib->version == KNIT_TASK_LIBRARY_VERSION)) {
		// Version 1 (no hooks) is what a library built against 1.0 or
		// 1.1 exports: it loads as before.
		rc = error_set(-KNIT_EINVAL,
			       "task library \"%s\": " KNIT_TASK_LIBRARY_SYMBOL
			       " has size %u and version %u (this "
			       "library knows size %zu with version 1, size %zu with version %d)",
			       path, lib->size, lib->version, (size_t)KNIT_TASK_LIBRARY_V1_SIZE,
			       sizeof(knit_task_library_t), KNIT_TASK_LIBRARY_VERSION);
	} else if (lib->tasks == nullptr || lib->ntasks == 0 || lib->ntasks > 65535) {
		rc = error_set(-KNIT_EINVAL,
			       "task library \"%s\": " KNIT_TASK_LIBRARY_SYMBOL
			       " has %s tasks and ntasks %zu (1..65535)",
			       path, lib->tasks == nullptr ? "NULL" : "its", lib->ntasks);
	} else {
		if (hooks != nullptr) {
			const bool v2 = lib->version >= 2;
			hooks->init = v2 ? lib->init : nullptr;
			hooks->fini = v2 ? lib->fini : nullptr;
		}
		rc = task_table_build(p, lib->tasks, lib->ntasks);
		if (rc != 0) {
			char why[kErrorMax];
			snprintf(why, sizeof why, "%s", knit_last_error());
			error_set(rc, "task library \"%s\": its task table is invalid: %s", path,
				  why);
		}
	}
	if (rc != 0) {
		dlclose(dl);
		return rc;
	}
	*handle = dl;
	return 0;
}

} // namespace knit::detail
