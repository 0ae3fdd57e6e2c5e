// SPDX-License-Identifier: MIT
// src/sysfile.cpp - the small kernel files (src/sysfile.h has the contract).
#include "src/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/sysfile.h"

namespace knit::detail {

int sysfile_write(const char *path, const char *text)
{
	const int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	const size_t len = strlen(text);
	const ssize_t w = write(fd, text, len);
	const int e = w < 0 ? errno : (size_t)w != len ? EIO : 0;
	close(fd);
	return e;
}

ssize_t sysfile_read(const char *path, char *buf, size_t n)
{
	buf[0] = 0;
	const int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t r;
	do
		r = read(fd, buf, n - 1);
	while (r < 0 && errno == EINTR);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = 0;
	return r;
}

void sysfile_line(const char *path, char *buf, size_t n)
{
	if (sysfile_read(path, buf, n) < 0)
		return;
	buf[strcspn(buf, "\n")] = 0;
}

int64_t sysfile_keyed(const char *path, const char *key)
{
	// memory.events is a handful of short lines; a longer file is read
	// only as far as this buffer holds.
	char buf[1024];
	if (sysfile_read(path, buf, sizeof buf) <= 0)
		return -1;
	const size_t klen = strlen(key);
	for (const char *line = buf; *line != 0;) {
		const char *end = strchr(line, '\n');
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			const char *v = line + klen + 1;
			if (*v < '0' || *v > '9')
				return -1;
			char *stop;
			errno = 0;
			const unsigned long long x = strtoull(v, &stop, 10);
			if (errno != 0 || x > (unsigned long long)INT64_MAX ||
			    (*stop != '\n' && *stop != 0))
				return -1;
			return (int64_t)x;
		}
		if (end == nullptr)
			break;
		line = end + 1;
	}
	return -1;
}

} // namespace knit::detail
