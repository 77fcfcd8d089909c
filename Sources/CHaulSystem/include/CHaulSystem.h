#ifndef HAUL_C_SYSTEM_H
#define HAUL_C_SYSTEM_H

// Thin wrappers for Linux calls that Swift's Glibc module does not expose. _GNU_SOURCE is defined only in
// the .c file so that it never leaks into modules Swift imports.
#include <stdint.h>
#include <sys/types.h>

int haul_epoll_create(void);
int haul_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
/// Fills parallel arrays so that Swift never has to mirror the packed `struct epoll_event`.
int haul_epoll_wait(int epfd, uint32_t *events, uint64_t *datas, int maxevents, int timeout_ms);
int haul_eventfd(unsigned int initval);
int haul_pipe2_nonblocking(int fds[2]);
/// `accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)`: a connection that is non-blocking and
/// close-on-exec from the start (glibc declares `accept4` only under _GNU_SOURCE).
int haul_accept4(int fd);
/// `fcntl(fd, F_SETPIPE_SZ, size)`: the pipe's new capacity in bytes (at least `size`), or -1.
int haul_set_pipe_size(int fd, int size);
/// `fcntl(fd, F_GETPIPE_SZ)`: the pipe's capacity in bytes, or -1.
int haul_pipe_size(int fd);
ssize_t haul_splice(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, size_t len, unsigned int flags);
int haul_fallocate(int fd, int mode, int64_t offset, int64_t len);
int haul_sync_file_range(int fd, int64_t offset, int64_t nbytes, unsigned int flags);
/// `fsetxattr(fd, name, value, size, 0)`: sets an extended attribute (Swift's Glibc module lacks <sys/xattr.h>).
int haul_fsetxattr(int fd, const char *name, const void *value, size_t size);
/// `getxattr(path, name, value, size)`: the attribute's length in bytes, or -1.
ssize_t haul_getxattr(const char *path, const char *name, void *value, size_t size);
/// `syncfs(fd)`: flushes the whole filesystem holding `fd` (glibc declares it only under _GNU_SOURCE).
int haul_syncfs(int fd);
/// `memfd_create(name, MFD_CLOEXEC)`: an anonymous file in memory (glibc declares it only under _GNU_SOURCE).
int haul_memfd_create(const char *name);
/// `open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, mode)`: a new regular file in `directory` with no name
/// yet (glibc defines `O_TMPFILE` only under _GNU_SOURCE); -1 with errno otherwise.
int haul_open_unnamed(const char *directory, unsigned int mode);
/// `linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH)`: gives the open file `fd` the name `path`, never replacing
/// one (`EEXIST`), without a walk through `/proc`. Linux 6.10 and later allow it to a caller whose credentials
/// are the ones that opened `fd`; older kernels only with CAP_DAC_READ_SEARCH. Refused with `ENOENT` (`EINVAL`
/// before Linux 2.6.39).
int haul_link_descriptor_by_empty_path(int fd, const char *path);
/// `linkat(AT_FDCWD, "/proc/self/fd/FD", AT_FDCWD, path, AT_SYMLINK_FOLLOW)`: gives the open file `fd` the
/// name `path`, never replacing one (`EEXIST`). Needs no privilege on any kernel, only `/proc`.
int haul_link_descriptor_through_proc(int fd, const char *path);
/// `renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE)` by its syscall number (older glibc lacks the
/// wrapper): `EEXIST` when `to` exists; `EINVAL` on a filesystem without the flag, `ENOSYS` on an old kernel.
int haul_rename_noreplace(const char *from, const char *to);
/// `pthread_setname_np` is a GNU extension, invisible to Swift without _GNU_SOURCE.
int haul_set_thread_name(unsigned long thread, const char *name);
/// Routes SIGINT, SIGTERM and SIGHUP to one byte (the signal number) written to `fd`, so that a thread can
/// react outside the signal handler. What each later signal does is `actions[phase * 3 + signal]` (signal 0
/// SIGINT, 1 SIGTERM, 2 SIGHUP; phase 0 running, 1 stopping, 2 acknowledged): 0 begin the stop, 1 ignore,
/// 2 write the acknowledged line to stderr and `_exit(exit_status)`. Before that, a copy of the first signal
/// sent with kill(2) by the same process within `duplicate_window_ns` of it is ignored.
int haul_install_stop_signals(int fd, int exit_status, const unsigned char actions[9], int64_t duplicate_window_ns);
/// The program has told the user that another signal quits: from now on phase 2, and `line` (copied, at most
/// 1024 bytes) is what an immediate exit writes. Only the first call counts.
void haul_acknowledge_stop(const char *line, size_t length);

extern const int haul_EPOLL_CTL_ADD;
extern const int haul_EPOLL_CTL_MOD;
extern const int haul_EPOLL_CTL_DEL;
extern const uint32_t haul_EPOLLIN;
extern const uint32_t haul_EPOLLOUT;
extern const uint32_t haul_EPOLLERR;
extern const uint32_t haul_EPOLLHUP;
extern const uint32_t haul_EPOLLRDHUP;
extern const uint32_t haul_EPOLLET;
extern const unsigned int haul_SPLICE_F_MOVE;
extern const unsigned int haul_SPLICE_F_NONBLOCK;
extern const unsigned int haul_SPLICE_F_MORE;
extern const unsigned int haul_SYNC_FILE_RANGE_WRITE;
extern const unsigned int haul_SYNC_FILE_RANGE_WAIT_BEFORE;
extern const unsigned int haul_SYNC_FILE_RANGE_WAIT_AFTER;

#endif
