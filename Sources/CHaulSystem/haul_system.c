#define _GNU_SOURCE
#include "CHaulSystem.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

int haul_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int haul_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

int haul_epoll_wait(int epfd, uint32_t *events, uint64_t *datas, int maxevents, int timeout_ms) {
    struct epoll_event evs[256];
    if (maxevents > 256) maxevents = 256;
    int n = epoll_wait(epfd, evs, maxevents, timeout_ms);
    for (int i = 0; i < n; i++) {
        events[i] = evs[i].events;
        datas[i] = evs[i].data.u64;
    }
    return n;
}

int haul_eventfd(unsigned int initval) { return eventfd(initval, EFD_CLOEXEC | EFD_NONBLOCK); }

int haul_pipe2_nonblocking(int fds[2]) { return pipe2(fds, O_CLOEXEC | O_NONBLOCK); }

int haul_accept4(int fd) { return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }

int haul_set_pipe_size(int fd, int size) { return fcntl(fd, F_SETPIPE_SZ, size); }

int haul_pipe_size(int fd) { return fcntl(fd, F_GETPIPE_SZ); }

ssize_t haul_splice(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, size_t len, unsigned int flags) {
    return splice(fd_in, (loff_t *)off_in, fd_out, (loff_t *)off_out, len, flags);
}

int haul_fallocate(int fd, int mode, int64_t offset, int64_t len) { return fallocate(fd, mode, offset, len); }

int haul_fsetxattr(int fd, const char *name, const void *value, size_t size) {
    return fsetxattr(fd, name, value, size, 0);
}

ssize_t haul_getxattr(const char *path, const char *name, void *value, size_t size) {
    return getxattr(path, name, value, size);
}

int haul_sync_file_range(int fd, int64_t offset, int64_t nbytes, unsigned int flags) {
    return sync_file_range(fd, offset, nbytes, flags);
}

int haul_syncfs(int fd) { return syncfs(fd); }

int haul_memfd_create(const char *name) { return memfd_create(name, MFD_CLOEXEC); }

int haul_open_unnamed(const char *directory, unsigned int mode) {
    return open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, (mode_t)mode);
}

int haul_link_descriptor_by_empty_path(int fd, const char *path) {
    return linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH);
}

int haul_link_descriptor_through_proc(int fd, const char *path) {
    char source[40];
    snprintf(source, sizeof source, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, source, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
}

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

int haul_rename_noreplace(const char *from, const char *to) {
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}

int haul_set_thread_name(unsigned long thread, const char *name) { return pthread_setname_np((pthread_t)thread, name); }

const int haul_EPOLL_CTL_ADD = EPOLL_CTL_ADD;
const int haul_EPOLL_CTL_MOD = EPOLL_CTL_MOD;
const int haul_EPOLL_CTL_DEL = EPOLL_CTL_DEL;
const uint32_t haul_EPOLLIN = EPOLLIN;
const uint32_t haul_EPOLLOUT = EPOLLOUT;
const uint32_t haul_EPOLLERR = EPOLLERR;
const uint32_t haul_EPOLLHUP = EPOLLHUP;
const uint32_t haul_EPOLLRDHUP = EPOLLRDHUP;
const uint32_t haul_EPOLLET = EPOLLET;
const unsigned int haul_SPLICE_F_MOVE = SPLICE_F_MOVE;
const unsigned int haul_SPLICE_F_NONBLOCK = SPLICE_F_NONBLOCK;
const unsigned int haul_SPLICE_F_MORE = SPLICE_F_MORE;
const unsigned int haul_SYNC_FILE_RANGE_WRITE = SYNC_FILE_RANGE_WRITE;
const unsigned int haul_SYNC_FILE_RANGE_WAIT_BEFORE = SYNC_FILE_RANGE_WAIT_BEFORE;
const unsigned int haul_SYNC_FILE_RANGE_WAIT_AFTER = SYNC_FILE_RANGE_WAIT_AFTER;

static int haul_stop_fd = -1;
static int haul_stop_exit_status = 130;
/// 0: running; 1: a stop began and the program has not yet told the user that another signal quits;
/// 2: it has (``haul_acknowledge_stop``).
static volatile int haul_stop_phase = 0;
/// What a signal does in each phase, `[phase * 3 + signal]` with signal 0 SIGINT, 1 SIGTERM, 2 SIGHUP:
/// 0 begins the stop, 1 is ignored (the same stop), 2 exits at once. Decided in Swift (StopSignalPolicy).
static unsigned char haul_stop_actions[9] = {0, 0, 0, 1, 1, 1, 2, 2, 1};
/// The line written before an immediate exit; filled before the phase becomes 2, never changed after.
static char haul_stop_exit_line[1024];
static size_t haul_stop_exit_line_length = 0;
/// The signal that began the stop: its number, sender and code, and when (CLOCK_MONOTONIC, nanoseconds).
static int haul_stop_first_signal = 0;
static pid_t haul_stop_first_sender = 0;
static int haul_stop_first_code = 0;
static int64_t haul_stop_first_time = 0;
/// How long after the first a copy of it sent by the same process with kill(2) is the same stop.
static int64_t haul_stop_duplicate_window = 0;

static int64_t haul_monotonic_nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

// Only async-signal-safe calls here: clock_gettime(2), write(2) and _exit(2); errno is restored for the
// interrupted code.
static void haul_on_stop_signal(int signal_number, siginfo_t *info, void *context) {
    (void)context;
    int saved_errno = errno;
    int index = signal_number == SIGINT ? 0 : signal_number == SIGTERM ? 1 : 2;
    int phase = __atomic_load_n(&haul_stop_phase, __ATOMIC_SEQ_CST);
    // `timeout` signals haul, then its process group: the same signal from the same sender moments apart,
    // which may come after haul has acknowledged the first. One stop (StopSignalPolicy.isSameDelivery).
    if (phase != 0 && info != NULL && info->si_code == SI_USER && haul_stop_first_code == SI_USER
        && signal_number == haul_stop_first_signal && info->si_pid == haul_stop_first_sender
        && haul_monotonic_nanoseconds() - haul_stop_first_time < haul_stop_duplicate_window) {
        errno = saved_errno;
        return;
    }
    switch (haul_stop_actions[phase * 3 + index]) {
    case 0: {
        int expected = 0;
        // Two signals at once on two threads: only one begins the stop.
        if (!__atomic_compare_exchange_n(&haul_stop_phase, &expected, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) break;
        haul_stop_first_signal = signal_number;
        haul_stop_first_sender = info != NULL ? info->si_pid : 0;
        haul_stop_first_code = info != NULL ? info->si_code : 0;
        haul_stop_first_time = haul_monotonic_nanoseconds();
        unsigned char byte = (unsigned char)signal_number;
        ssize_t ignored = write(haul_stop_fd, &byte, 1);
        (void)ignored;
        break;
    }
    case 2: {
        size_t offset = 0;
        while (offset < haul_stop_exit_line_length) {
            ssize_t written = write(2, haul_stop_exit_line + offset, haul_stop_exit_line_length - offset);
            if (written < 0 && errno == EINTR) continue;
            if (written <= 0) break;
            offset += (size_t)written;
        }
        _exit(haul_stop_exit_status);
    }
    default:
        break;
    }
    errno = saved_errno;
}

int haul_install_stop_signals(int fd, int exit_status, const unsigned char actions[9], int64_t duplicate_window_ns) {
    haul_stop_fd = fd;
    haul_stop_exit_status = exit_status;
    haul_stop_duplicate_window = duplicate_window_ns;
    memcpy(haul_stop_actions, actions, sizeof haul_stop_actions);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = haul_on_stop_signal;
    // One handler at a time on a thread: a SIGHUP cannot interrupt the SIGINT handler half-way.
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, SIGINT);
    sigaddset(&action.sa_mask, SIGTERM);
    sigaddset(&action.sa_mask, SIGHUP);
    action.sa_flags = SA_RESTART | SA_SIGINFO;
    if (sigaction(SIGINT, &action, NULL) != 0) return -1;
    if (sigaction(SIGTERM, &action, NULL) != 0) return -1;
    // A hang-up that whoever started haul ignores (`nohup haul ...`, SIG_IGN inherited across exec) stays
    // ignored: keeping on after the terminal closes is what nohup asks for. (SIGINT and SIGTERM are taken over
    // as before: a shell's background job inherits an ignored SIGINT, and `kill -INT` is how scripts stop it.)
    struct sigaction inherited;
    if (sigaction(SIGHUP, NULL, &inherited) != 0) return -1;
    if (!(inherited.sa_flags & SA_SIGINFO) && inherited.sa_handler == SIG_IGN) return 0;
    if (sigaction(SIGHUP, &action, NULL) != 0) return -1;
    return 0;
}

void haul_acknowledge_stop(const char *line, size_t length) {
    if (__atomic_load_n(&haul_stop_phase, __ATOMIC_SEQ_CST) == 2) return;
    if (length > sizeof haul_stop_exit_line) length = sizeof haul_stop_exit_line;
    memcpy(haul_stop_exit_line, line, length);
    haul_stop_exit_line_length = length;
    // The line is complete before any handler can see phase 2.
    __atomic_store_n(&haul_stop_phase, 2, __ATOMIC_SEQ_CST);
}
