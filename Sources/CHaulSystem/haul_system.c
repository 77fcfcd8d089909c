#define _GNU_SOURCE
#include "CHaulSystem.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
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

ssize_t haul_splice(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, size_t len, unsigned int flags) {
    return splice(fd_in, (loff_t *)off_in, fd_out, (loff_t *)off_out, len, flags);
}

int haul_fallocate(int fd, int mode, int64_t offset, int64_t len) { return fallocate(fd, mode, offset, len); }

int haul_sync_file_range(int fd, int64_t offset, int64_t nbytes, unsigned int flags) {
    return sync_file_range(fd, offset, nbytes, flags);
}

int haul_syncfs(int fd) { return syncfs(fd); }

int haul_memfd_create(const char *name) { return memfd_create(name, MFD_CLOEXEC); }

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
static volatile sig_atomic_t haul_stop_count = 0;

// Only async-signal-safe calls here: write(2) and _exit(2).
static void haul_on_stop_signal(int signal_number) {
    haul_stop_count += 1;
    if (haul_stop_count > 1) _exit(haul_stop_exit_status);
    unsigned char byte = (unsigned char)signal_number;
    ssize_t ignored = write(haul_stop_fd, &byte, 1);
    (void)ignored;
}

int haul_install_stop_signals(int fd, int exit_status) {
    haul_stop_fd = fd;
    haul_stop_exit_status = exit_status;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = haul_on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(SIGINT, &action, NULL) != 0) return -1;
    if (sigaction(SIGTERM, &action, NULL) != 0) return -1;
    return 0;
}
