/* SPDX-License-Identifier: MIT */
/*
 * knitting.h - libknitting's public C ABI.
 *
 * libknitting hands tasks from a host to a pool of parked workers through
 * shared memory and hands the results back. Everything here is plain C
 * (C99 and later, and C++ through extern "C"): opaque handles, flat structs
 * that start with a `size` field so they can grow, and negative error codes.
 * See libknitting(7).
 */
#ifndef KNITTING_H
#define KNITTING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KNIT_API __attribute__((visibility("default")))
#else
#define KNIT_API
#endif

#define KNIT_VERSION_MAJOR 0
#define KNIT_VERSION_MINOR 1
#define KNIT_VERSION_PATCH 0
/* (major << 16) | (minor << 8) | patch, comparable as an integer. */
#define KNIT_VERSION_NUMBER \
	((KNIT_VERSION_MAJOR << 16) | (KNIT_VERSION_MINOR << 8) | KNIT_VERSION_PATCH)

/*
 * Error codes. Every function that can fail returns 0 (or a count) on
 * success and the negative of one of these on failure. They are libknitting's
 * own numbers, not errno values.
 */
enum knit_error {
	KNIT_OK = 0,
	KNIT_EINVAL = 1,     /* an argument is NULL, out of range, or malformed */
	KNIT_ENOMEM = 2,     /* memory or address space could not be had */
	KNIT_EAGAIN = 3,     /* no room right now (backlog full): try again later */
	KNIT_ENOTASK = 4,    /* no task has that id or name */
	KNIT_ETOOBIG = 5,    /* payload larger than the pool's per-call limit */
	KNIT_ECLOSED = 6,    /* the pool is stopping or stopped */
	KNIT_ETIMEDOUT = 7,  /* a deadline passed */
	KNIT_ECANCELED = 8,  /* the call was cancelled */
	KNIT_ECRASHED = 9,   /* the worker running the call died */
	KNIT_EPROTO = 10,    /* a malformed frame in shared memory */
	KNIT_ETASK = 11,     /* the task reported an error (see the result value) */
	KNIT_ESYSTEM = 12,   /* the operating system refused (thread, mmap, futex) */
	KNIT_EVERSION = 13,  /* a struct's size field is not one this library knows */
	KNIT_ENOTFOUND = 14, /* no such ticket (already completed or never issued) */
	KNIT_EBUSY = 15,     /* the object is in use (e.g. destroy while running) */
	KNIT_ERROR_MAX_ = 16
};

/*
 * A tagged value: a task's argument or result. Flat so every FFI can build
 * one. Scalars travel inside the queue slot; bytes, strings and error
 * messages up to a few hundred bytes travel in the slot's inline area, longer
 * ones in the pool's payload arena. Bytes handed to the library are copied
 * before the call returns; bytes the library hands out are owned by it and
 * stay valid for the documented lifetime (until knit_completion_release for
 * a result, until the task function returns for an argument).
 */
typedef enum knit_value_type {
	KNIT_VALUE_NONE = 0,   /* no value */
	KNIT_VALUE_BOOL = 1,   /* i64 is 0 or 1 */
	KNIT_VALUE_I64 = 2,    /* i64 */
	KNIT_VALUE_F64 = 3,    /* f64 */
	KNIT_VALUE_BYTES = 4,  /* data, len: opaque bytes */
	KNIT_VALUE_STRING = 5, /* data, len: UTF-8 text, len excludes the NUL that
				  the library always appends to strings it hands out */
	KNIT_VALUE_ERROR = 6   /* code: the task's error code; data, len: message */
} knit_value_type_t;

typedef struct knit_value {
	uint32_t type;    /* knit_value_type_t */
	int32_t code;     /* KNIT_VALUE_ERROR only: a task-defined code */
	int64_t i64;      /* KNIT_VALUE_BOOL, KNIT_VALUE_I64 */
	double f64;       /* KNIT_VALUE_F64 */
	const void *data; /* KNIT_VALUE_BYTES, _STRING, _ERROR */
	size_t len;       /* bytes at data */
} knit_value_t;

/* The library's version as KNIT_VERSION_NUMBER would spell it. */
KNIT_API uint32_t knit_version(void);

/* A static, human-readable description of a code (positive or negative);
 * never NULL. */
KNIT_API const char *knit_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* KNITTING_H */
