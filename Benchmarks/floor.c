// The floor of one big download on this machine: the least CPU a client can spend receiving a file over N
// connections with Range requests, each connection on a thread of its own with blocking calls (no event
// loop, no epoll, no parsing beyond finding the end of the head). Built and run by Benchmarks/bigfile.sh.
//
//   floor MODE HOST PORT PATH SIZE CONNECTIONS [OUTPUT] [PIPE_BYTES]
//
// MODE says where each connection's body goes:
//   splice-file    socket -> pipe -> OUTPUT at the range's offset (splice), OUTPUT preallocated (fallocate)
//   splice-sparse  the same, OUTPUT only sized (ftruncate): no unwritten extents to convert
//   splice-null    socket -> pipe -> /dev/null (splice): the pipe's cost without a file
//   recv           recv into a 256 KiB buffer and drop it (what `curl -o /dev/null` does)
//   recv-pwrite    recv into a 256 KiB buffer and pwrite it at the range's offset (two copies), preallocated
//   loop-file      as splice-file, but all connections on one thread with non-blocking sockets and epoll (level-
//                  triggered): a splice socket -> pipe, the pipe -> file, again until a splice comes back
//                  short, then back to epoll. Haul's model (Connection.performReads), without Haul.
//   loop-writer    the same loop, but the pipe -> file splices (the copy into the page cache) run on a second
//                  thread: the loop splices socket -> pipe and hands the connection over (EPOLLONESHOT), the
//                  writer moves the pipe into the file and re-arms the socket. Two cores for one download.
// It prints the bytes of body received; the caller checks them, compares OUTPUT with the source
// and times the run.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

enum mode { SPLICE_FILE, SPLICE_SPARSE, SPLICE_NULL, RECV, RECV_PWRITE, LOOP_FILE, LOOP_WRITER };

static enum mode mode;
static const char *host, *path;
static int port, output = -1, pipe_bytes = 1 << 20;

struct range { long long first, end, received; int fd, pipe_in, pipe_out, capacity; ssize_t pending; };

static void die(const char *what) { perror(what); exit(2); }

static int connect_to_server(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(port) };
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) die("inet_pton");
    if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

// Sends the request and consumes exactly the response head (peeked first, so no body byte is read here).
static void request(int fd, const struct range *range) {
    char head[1024];
    int length = snprintf(head, sizeof head, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nRange: bytes=%lld-%lld\r\n"
                          "Connection: close\r\n\r\n", path, host, port, range->first, range->end - 1);
    if (send(fd, head, length, 0) != length) die("send");
    char response[8192];
    for (;;) {
        ssize_t seen = recv(fd, response, sizeof response - 1, MSG_PEEK);
        if (seen <= 0) die("recv head");
        response[seen] = 0;
        char *end = strstr(response, "\r\n\r\n");
        if (!end) continue;
        if (strncmp(response, "HTTP/1.1 206", 12) != 0) { fprintf(stderr, "not a 206: %.40s\n", response); exit(2); }
        size_t take = end + 4 - response;
        if (recv(fd, response, take, 0) != (ssize_t)take) die("recv head");
        return;
    }
}

static void *receive(void *argument) {
    struct range *range = argument;
    int fd = connect_to_server();
    request(fd, range);
    long long left = range->end - range->first, at = range->first;
    if (mode == RECV || mode == RECV_PWRITE) {
        size_t size = 256 << 10;
        char *buffer = malloc(size);
        while (left > 0) {
            ssize_t n = recv(fd, buffer, left < (long long)size ? left : size, 0);
            if (n <= 0) die("recv");
            if (mode == RECV_PWRITE) {
                for (ssize_t done = 0; done < n;) {
                    ssize_t w = pwrite(output, buffer + done, n - done, at + done);
                    if (w <= 0) die("pwrite");
                    done += w;
                }
            }
            at += n; left -= n; range->received += n;
        }
        free(buffer);
    } else {
        int ends[2];
        if (pipe2(ends, O_CLOEXEC) < 0) die("pipe2");
        int capacity = fcntl(ends[1], F_SETPIPE_SZ, pipe_bytes);
        if (capacity < 0) capacity = fcntl(ends[1], F_GETPIPE_SZ);
        while (left > 0) {
            ssize_t in = splice(fd, NULL, ends[1], NULL, left < capacity ? left : capacity, SPLICE_F_MOVE);
            if (in <= 0) die("splice from socket");
            for (ssize_t done = 0; done < in;) {
                loff_t offset = at + done;
                ssize_t out = splice(ends[0], NULL, output, mode == SPLICE_NULL ? NULL : &offset, in - done, SPLICE_F_MOVE);
                if (out <= 0) die("splice into output");
                done += out;
            }
            at += in; left -= in; range->received += in;
        }
        close(ends[0]);
        close(ends[1]);
    }
    close(fd);
    return NULL;
}

static void make_pipe(struct range *range) {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) < 0) die("pipe2");
    range->pipe_out = ends[0];
    range->pipe_in = ends[1];
    range->capacity = fcntl(ends[1], F_SETPIPE_SZ, pipe_bytes);
    if (range->capacity < 0) range->capacity = fcntl(ends[1], F_GETPIPE_SZ);
}

static void drain_pipe(struct range *range, ssize_t count) {
    for (ssize_t done = 0; done < count;) {
        loff_t offset = range->first + range->received + done;
        ssize_t out = splice(range->pipe_out, NULL, output, &offset, count - done, SPLICE_F_MOVE);
        if (out <= 0) die("splice into output");
        done += out;
    }
    range->received += count;
}

/// One non-blocking splice socket -> pipe: the bytes moved, 0 when the socket had none.
static ssize_t fill_pipe(struct range *range, ssize_t *asked) {
    long long left = range->end - range->first - range->received;
    *asked = left < range->capacity ? left : range->capacity;
    ssize_t in = splice(range->fd, NULL, range->pipe_in, NULL, *asked, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (in < 0 && errno == EAGAIN) return 0;
    if (in <= 0) die("splice from socket");
    return in;
}

static int done_event;
static struct range **queue;
static int queue_head, queue_count, queue_size, epoll;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_ready = PTHREAD_COND_INITIALIZER;

static void *writer(void *argument) {
    int left = *(int *)argument;
    while (left > 0) {
        pthread_mutex_lock(&queue_lock);
        while (queue_count == 0) pthread_cond_wait(&queue_ready, &queue_lock);
        struct range *range = queue[queue_head];
        queue_head = (queue_head + 1) % queue_size;
        queue_count--;
        pthread_mutex_unlock(&queue_lock);
        drain_pipe(range, range->pending);
        if (range->first + range->received == range->end) {
            left--;
            continue;
        }
        struct epoll_event event = { .events = EPOLLIN | EPOLLONESHOT, .data.ptr = range };
        if (epoll_ctl(epoll, EPOLL_CTL_MOD, range->fd, &event) < 0) die("epoll_ctl rearm");
    }
    uint64_t one = 1;
    if (write(done_event, &one, sizeof one) != sizeof one) die("eventfd");
    return NULL;
}

static void run_loop(struct range *ranges, int connections) {
    epoll = epoll_create1(EPOLL_CLOEXEC);
    if (epoll < 0) die("epoll_create1");
    int oneshot = mode == LOOP_WRITER ? EPOLLONESHOT : 0;
    for (int i = 0; i < connections; i++) {
        ranges[i].fd = connect_to_server();
        request(ranges[i].fd, &ranges[i]);
        fcntl(ranges[i].fd, F_SETFL, O_NONBLOCK);
        make_pipe(&ranges[i]);
        struct epoll_event event = { .events = EPOLLIN | oneshot, .data.ptr = &ranges[i] };
        if (epoll_ctl(epoll, EPOLL_CTL_ADD, ranges[i].fd, &event) < 0) die("epoll_ctl");
    }
    pthread_t thread;
    int open_count = connections;
    if (mode == LOOP_WRITER) {
        done_event = eventfd(0, EFD_CLOEXEC);
        struct epoll_event event = { .events = EPOLLIN, .data.ptr = NULL };
        if (epoll_ctl(epoll, EPOLL_CTL_ADD, done_event, &event) < 0) die("epoll_ctl eventfd");
        queue_size = connections;
        queue = calloc(connections, sizeof *queue);
        if (pthread_create(&thread, NULL, writer, &open_count) != 0) die("pthread_create");
    }
    struct epoll_event events[64];
    for (int running = 1; running;) {
        int ready = epoll_wait(epoll, events, 64, -1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) die("epoll_wait");
        for (int i = 0; i < ready; i++) {
            struct range *range = events[i].data.ptr;
            if (!range) { running = 0; break; }
            if (mode == LOOP_WRITER) {
                ssize_t asked, in = fill_pipe(range, &asked);
                if (in == 0) {
                    struct epoll_event event = { .events = EPOLLIN | EPOLLONESHOT, .data.ptr = range };
                    if (epoll_ctl(epoll, EPOLL_CTL_MOD, range->fd, &event) < 0) die("epoll_ctl rearm");
                    continue;
                }
                range->pending = in;
                pthread_mutex_lock(&queue_lock);
                queue[(queue_head + queue_count) % queue_size] = range;
                queue_count++;
                pthread_cond_signal(&queue_ready);
                pthread_mutex_unlock(&queue_lock);
                continue;
            }
            for (;;) {
                ssize_t asked, in = fill_pipe(range, &asked);
                if (in == 0) break;
                drain_pipe(range, in);
                if (range->first + range->received == range->end) {
                    epoll_ctl(epoll, EPOLL_CTL_DEL, range->fd, NULL);
                    if (--open_count == 0) running = 0;
                    break;
                }
                if (in < asked) break;
            }
        }
    }
    if (mode == LOOP_WRITER) pthread_join(thread, NULL);
    for (int i = 0; i < connections; i++) { close(ranges[i].fd); close(ranges[i].pipe_in); close(ranges[i].pipe_out); }
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: floor splice-file|splice-sparse|splice-null|recv|recv-pwrite|loop-file|loop-writer HOST PORT PATH SIZE CONNECTIONS [OUTPUT] [PIPE_BYTES]\n");
        return 2;
    }
    const char *names[] = { "splice-file", "splice-sparse", "splice-null", "recv", "recv-pwrite", "loop-file", "loop-writer" };
    mode = -1;
    for (int i = 0; i < 7; i++) if (strcmp(argv[1], names[i]) == 0) mode = i;
    if ((int)mode < 0) { fprintf(stderr, "unknown mode %s\n", argv[1]); return 2; }
    host = argv[2]; port = atoi(argv[3]); path = argv[4];
    long long size = atoll(argv[5]);
    int connections = atoi(argv[6]);
    if (argc > 8) pipe_bytes = atoi(argv[8]);
    if (mode != SPLICE_NULL && mode != RECV) {
        if (argc < 8) { fprintf(stderr, "%s needs OUTPUT\n", argv[1]); return 2; }
        output = open(argv[7], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (output < 0) die("open output");
        if (mode == SPLICE_SPARSE) { if (ftruncate(output, size) < 0) die("ftruncate"); }
        else if (fallocate(output, 0, 0, size) < 0) die("fallocate");
    } else if (mode == SPLICE_NULL) {
        output = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (output < 0) die("open /dev/null");
    }
    struct range ranges[connections];
    pthread_t threads[connections];
    long long step = size / connections;
    for (int i = 0; i < connections; i++)
        ranges[i] = (struct range){ .first = i * step, .end = i == connections - 1 ? size : (i + 1) * step };
    if (mode == LOOP_FILE || mode == LOOP_WRITER) {
        run_loop(ranges, connections);
    } else {
        for (int i = 0; i < connections; i++)
            if (pthread_create(&threads[i], NULL, receive, &ranges[i]) != 0) die("pthread_create");
        for (int i = 0; i < connections; i++) pthread_join(threads[i], NULL);
    }
    long long received = 0;
    for (int i = 0; i < connections; i++) received += ranges[i].received;
    if (output >= 0 && close(output) < 0) die("close output");
    printf("%lld\n", received);
    return received == size ? 0 : 1;
}
