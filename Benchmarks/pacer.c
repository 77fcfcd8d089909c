/* A per-connection pacer for the throttled scenario (c) of Benchmarks/bench.py: a TCP proxy on loopback that
 * sends each client connection at most RATE bytes/s, counted across every request the connection carries.
 *
 * Why: nginx's limit_rate is per request and gives each request a second's worth up front, so a client that
 * asks for many small ranges is never slowed. Here the server-to-client bytes of one TCP connection go
 * through one token bucket. It starts with BURST bytes; a send waits until the bucket is out of debt and may
 * then take it into debt by at most one read (CHUNK bytes). What the bucket gains while the connection
 * waits for the server or for the client (the server has nothing to send, or the client's socket is full)
 * is capped at BURST: a client gets no allowance for its idle time beyond BURST. Only while the pacer itself
 * holds bytes it is waiting to send (its timer, or it was scheduled late on a busy machine) does the bucket
 * gain up to LATE seconds' worth, so that the pacer's own lateness is not charged to the client: a link of
 * RATE would have delivered those bytes meanwhile. Over any interval t one connection gets at most
 * BURST + CHUNK + RATE x (t + LATE) bytes, and at most BURST + CHUNK + RATE x t when the pacer is on time.
 * Client-to-server bytes are not paced. Each client connection gets a connection of its own upstream.
 *
 * A second port, the control port, answers one command per connection, a line: "stats" (JSON: connections
 * open now, opened and at most open at once since the last reset, bytes sent to clients since then, and
 * per connection closed since then [bytes, seconds from its first to its last byte sent, seconds of those
 * it waited for the server, seconds it waited for the client, its first and last byte's CLOCK_MONOTONIC
 * time]) or
 * "reset" (the same answer, then the counters are zeroed).
 *
 * Build: cc -O2 -o pacer Benchmarks/pacer.c   (bench.py does this in its temporary directory)
 * Usage: pacer UPSTREAM_PORT RATE [BURST [CHUNK [LATE [ADDRESS]]]]   (upstream 127.0.0.1; BURST, CHUNK 65536;
 *        LATE 0.1; ADDRESS, an IPv4 address to listen on, 127.0.0.1: mirrors on 127.0.0.2 and .3 are other hosts
 *        to a client that counts per host, as aria2's adaptive selector does)
 * Prints "PORT CONTROL_PORT" once both listen on ADDRESS; ends on SIGTERM or SIGINT.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn;
struct end { struct conn *c; int fd; unsigned registered; };
struct conn {
    struct end client, upstream;
    char *down; size_t down_len, down_off;   /* upstream -> client, at most CHUNK */
    char *up; size_t up_len, up_off;         /* client -> upstream */
    int connected, client_eof, upstream_eof, dead;
    int waiting; double waiting_since, waited[3];   /* waiting for: 1 the server, 2 the client (its socket full) */
    double tokens, last, wake;
    long long bytes; double first, final;
    struct conn *next, *prev;
};

static double rate, burst = 65536, late = 0.1;
static size_t chunk = 65536;
static int ep, upstream_port;
static struct in_addr listen_address = { .s_addr = 0 };
static struct conn *conns, *graves;   /* graves: closed, freed after the batch of events naming them */
static int open_now, opened, max_open;
static long long sent;
static struct { long long bytes; double seconds, server, client, first, final; } *closed_list;
static size_t closed_count, closed_cap;
static volatile sig_atomic_t stopping;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void on_signal(int s) { (void)s; stopping = 1; }

static int listener(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr = listen_address };
    socklen_t n = sizeof a;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 1024) || getsockname(fd, (struct sockaddr *)&a, &n)) {
        perror("pacer: listen");
        exit(1);
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static void want(struct end *e, unsigned events) {
    struct epoll_event ev = { .events = events, .data.ptr = e };
    if (events == e->registered) return;
    /* No interest: out of the set altogether, so that a hang-up we cannot act on yet does not spin. */
    if (!events) epoll_ctl(ep, EPOLL_CTL_DEL, e->fd, NULL);
    else epoll_ctl(ep, e->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, e->fd, &ev);
    e->registered = events;
}

static void finish(struct conn *c) {
    close(c->client.fd);
    close(c->upstream.fd);
    if (c->bytes) {
        if (closed_count == closed_cap) {
            closed_cap = closed_cap ? 2 * closed_cap : 256;
            closed_list = realloc(closed_list, closed_cap * sizeof *closed_list);
        }
        closed_list[closed_count].bytes = c->bytes;
        closed_list[closed_count].seconds = c->final - c->first;
        closed_list[closed_count].server = c->waited[1];
        closed_list[closed_count].client = c->waited[2];
        closed_list[closed_count].first = c->first;
        closed_list[closed_count].final = c->final;
        closed_count++;
    }
    if (c->prev) c->prev->next = c->next; else conns = c->next;
    if (c->next) c->next->prev = c->prev;
    open_now--;
    c->dead = 1;
    c->next = graves;
    graves = c;
}

static void refill(struct conn *c, double t) {
    double cap = c->waiting ? burst : fmax(burst, rate * late);
    c->tokens = fmin(cap, c->tokens + (t - c->last) * rate);
    c->last = t;
    if (c->waiting && c->bytes) c->waited[c->waiting] += t - c->waiting_since;   /* between its first and last byte */
    c->waiting = 0;
}

static void wait_for(struct conn *c, int whom) {
    if (c->waiting != whom) { c->waiting = whom; c->waiting_since = now(); }
}

/* Every step the connection can take without blocking; then what it waits for. Returns 0 once closed. */
static int step(struct conn *c) {
    int progress = 1;
    c->wake = 0;
    while (progress) {
        progress = 0;
        if (!c->connected) {
            int error = 0;
            socklen_t n = sizeof error;
            if (getsockopt(c->upstream.fd, SOL_SOCKET, SO_ERROR, &error, &n) || error) { finish(c); return 0; }
            struct sockaddr_in a;
            n = sizeof a;
            if (getpeername(c->upstream.fd, (struct sockaddr *)&a, &n)) break;   /* still connecting */
            c->connected = 1;
        }
        /* client -> upstream, unpaced */
        if (!c->client_eof && c->up_len == 0) {
            ssize_t n = read(c->client.fd, c->up, chunk);
            if (n > 0) { c->up_len = n; c->up_off = 0; progress = 1; }
            else if (n == 0) { c->client_eof = 1; shutdown(c->upstream.fd, SHUT_WR); progress = 1; }
            else if (errno != EAGAIN && errno != EINTR) { finish(c); return 0; }
        }
        if (c->up_off < c->up_len) {
            ssize_t n = send(c->upstream.fd, c->up + c->up_off, c->up_len - c->up_off, MSG_NOSIGNAL);
            if (n > 0) { c->up_off += n; progress = 1; if (c->up_off == c->up_len) c->up_len = c->up_off = 0; }
            else if (n < 0 && errno != EAGAIN && errno != EINTR) { finish(c); return 0; }
        }
        /* upstream -> client, through the bucket */
        if (!c->upstream_eof && c->down_len == 0) {
            ssize_t n = read(c->upstream.fd, c->down, chunk);
            if (n > 0) { c->down_len = n; c->down_off = 0; progress = 1; }
            else if (n == 0) { c->upstream_eof = 1; shutdown(c->client.fd, SHUT_WR); progress = 1; }
            else if (errno == EAGAIN || errno == EINTR) wait_for(c, 1);
            else { finish(c); return 0; }
        }
        if (c->down_off < c->down_len) {
            double t = now();
            refill(c, t);
            if (c->tokens < 0) { c->wake = t + -c->tokens / rate; break; }
            ssize_t n = send(c->client.fd, c->down + c->down_off, c->down_len - c->down_off, MSG_NOSIGNAL);
            if (n > 0) {
                if (!c->bytes) c->first = t;
                c->final = t;
                c->bytes += n;
                sent += n;
                c->tokens -= n;
                c->down_off += n;
                if (c->down_off == c->down_len) c->down_len = c->down_off = 0;
                progress = 1;
            } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) wait_for(c, 2);
            else { finish(c); return 0; }
        }
    }
    if (c->connected && c->client_eof && c->up_len == 0 && c->upstream_eof && c->down_len == 0) { finish(c); return 0; }
    unsigned client = 0, upstream = 0;
    if (c->connected && !c->client_eof && c->up_len == 0) client |= EPOLLIN;
    if (c->down_off < c->down_len && !c->wake) client |= EPOLLOUT;
    if (!c->connected || c->up_off < c->up_len) upstream |= EPOLLOUT;
    if (c->connected && !c->upstream_eof && c->down_len == 0) upstream |= EPOLLIN;
    want(&c->client, client);
    want(&c->upstream, upstream);
    return 1;
}

static void accept_client(int lfd) {
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
        if (fd < 0) return;
        int u = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(upstream_port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        if (u < 0 || (connect(u, (struct sockaddr *)&a, sizeof a) && errno != EINPROGRESS)) {
            close(fd);
            if (u >= 0) close(u);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = calloc(1, sizeof *c);
        c->client = (struct end){ c, fd, 0 };
        c->upstream = (struct end){ c, u, 0 };
        c->down = malloc(chunk);
        c->up = malloc(chunk);
        c->tokens = burst;
        c->last = now();
        c->next = conns;
        if (conns) conns->prev = c;
        conns = c;
        open_now++;
        opened++;
        if (open_now > max_open) max_open = open_now;
        step(c);
    }
}

static void control(int lfd) {
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) return;
    char line[64] = { 0 };
    struct timeval tv = { 2, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = read(fd, line, sizeof line - 1);
    size_t size = 256 + closed_count * 160, used;
    char *out = malloc(size);
    used = snprintf(out, size, "{\"open\": %d, \"opened\": %d, \"max_open\": %d, \"bytes\": %lld, \"closed\": [",
                    open_now, opened, max_open, sent);
    for (size_t i = 0; i < closed_count; i++)
        used += snprintf(out + used, size - used, "%s[%lld, %.6f, %.6f, %.6f, %.6f, %.6f]", i ? ", " : "", closed_list[i].bytes,
                         closed_list[i].seconds, closed_list[i].server, closed_list[i].client, closed_list[i].first,
                         closed_list[i].final);
    used += snprintf(out + used, size - used, "]}\n");
    for (size_t off = 0; off < used;) {
        ssize_t w = write(fd, out + off, used - off);
        if (w <= 0) break;
        off += w;
    }
    free(out);
    if (n > 0 && strncmp(line, "reset", 5) == 0) {
        opened = 0;
        max_open = open_now;
        sent = 0;
        closed_count = 0;
    }
    close(fd);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: pacer UPSTREAM_PORT RATE [BURST [CHUNK [LATE [ADDRESS]]]]\n");
        return 2;
    }
    upstream_port = atoi(argv[1]);
    rate = atof(argv[2]);
    if (argc > 3) burst = atof(argv[3]);
    if (argc > 4) chunk = strtoul(argv[4], NULL, 10);
    if (argc > 5) late = atof(argv[5]);
    listen_address.s_addr = htonl(INADDR_LOOPBACK);
    if (argc > 6 && inet_pton(AF_INET, argv[6], &listen_address) != 1) { fprintf(stderr, "pacer: bad address\n"); return 2; }
    if (rate <= 0 || burst <= 0 || chunk == 0 || late < 0) { fprintf(stderr, "pacer: bad arguments\n"); return 2; }
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    int port, control_port;
    int lfd = listener(&port), cfd = listener(&control_port);
    ep = epoll_create1(EPOLL_CLOEXEC);
    struct end lend = { NULL, lfd, 0 }, cend = { NULL, cfd, 0 };
    want(&lend, EPOLLIN);
    want(&cend, EPOLLIN);
    printf("%d %d\n", port, control_port);
    fflush(stdout);
    struct epoll_event events[256];
    while (!stopping) {
        double t = now(), wake = 0;
        for (struct conn *c = conns; c; c = c->next)
            if (c->wake && (!wake || c->wake < wake)) wake = c->wake;
        int timeout = wake ? (int)ceil(fmax(0, wake - t) * 1000) : -1;
        int n = epoll_wait(ep, events, 256, timeout);
        if (n < 0 && errno != EINTR) { perror("pacer: epoll_wait"); return 1; }
        for (int i = 0; i < n; i++) {
            struct end *e = events[i].data.ptr;
            if (e == &lend) accept_client(lfd);
            else if (e == &cend) control(cfd);
            else if (!e->c->dead) {
                if (events[i].events & EPOLLERR && e == &e->c->client) finish(e->c);
                else step(e->c);
            }
        }
        t = now();
        for (struct conn *c = conns, *next; c; c = next) {
            next = c->next;
            if (c->wake && c->wake <= t) step(c);
        }
        while (graves) {
            struct conn *c = graves;
            graves = c->next;
            free(c->down);
            free(c->up);
            free(c);
        }
    }
    return 0;
}
