// The kernel's cost of creating, writing and naming many small files, one way per run: N files of 4 KiB
// into DIRECTORY (fresh and empty: ext4 slows down for a while after many deletions, so move old runs aside
// rather than delete them before a run). Prints the process's CPU (user + system) and wall time.
//
//   cc -O2 -o naming Benchmarks/naming.c -lpthread
//   [N=10000] [T=threads] naming WAY DIRECTORY [x] [s]      x: fsetxattr of a 56-byte value, s: fstat
//   naming probe DIRECTORY                                  may this user linkat(AT_EMPTY_PATH)?
//
// WAY:
//   a   Haul before 2026-11-26: open(DIR, O_TMPFILE) + pwrite + linkat("/proc/self/fd/N", AT_SYMLINK_FOLLOW)
//   b   Haul after: the same, linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH)
//   c   b with every call relative to an open directory descriptor (openat(dirfd, "."), name only)
//   cp  a with every call relative to an open directory descriptor
//   d   a named NAME.part (O_CREAT | O_EXCL) + pwrite + renameat2(RENAME_NOREPLACE), full paths
//   dd  d relative to an open directory descriptor
//   e   curl: open(NAME, O_CREAT | O_TRUNC) + write
//   ex  open(NAME, O_CREAT | O_EXCL) + pwrite: the final name at once (not allowed for Haul: a final name
//       must appear only complete)
// Each file is closed after its last call. Measured in docs/benchmarks.md ("Naming a small file").
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static char buf[4096];
static const char xval[56] = "hv2\ne\"6b087445-1000\"\nt1795716165abcdefghijklmnopqrstu.";
static int use_xattr, use_fstat, n = 10000;
static const char *dir;
static int dirfd_;

static void die(const char *w) { perror(w); exit(1); }
static void tag(int fd) {
    if (use_fstat) { struct stat st; if (fstat(fd, &st)) die("fstat"); }
    if (use_xattr && fsetxattr(fd, "user.haul.validators", xval, 56, 0)) die("fsetxattr");
}

static void one(const char *variant, int i) {
    char path[4096], name[32], part[4200], pname[48], src[40];
    snprintf(name, sizeof name, "f%05d", i);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd;
    if (!strcmp(variant, "a")) {            // today: O_TMPFILE by path, linkat /proc/self/fd
        fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644); if (fd < 0) die("open");
        if (pwrite(fd, buf, 4096, 0) != 4096) die("pwrite");
        tag(fd);
        snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
        if (linkat(AT_FDCWD, src, AT_FDCWD, path, AT_SYMLINK_FOLLOW)) die("linkat");
    } else if (!strcmp(variant, "b")) {     // AT_EMPTY_PATH, full paths
        fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644); if (fd < 0) die("open");
        if (pwrite(fd, buf, 4096, 0) != 4096) die("pwrite");
        tag(fd);
        if (linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH)) die("linkat empty");
    } else if (!strcmp(variant, "c")) {     // dirfd-relative, AT_EMPTY_PATH
        fd = openat(dirfd_, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0644); if (fd < 0) die("openat");
        if (pwrite(fd, buf, 4096, 0) != 4096) die("pwrite");
        tag(fd);
        if (linkat(fd, "", dirfd_, name, AT_EMPTY_PATH)) die("linkat empty dirfd");
    } else if (!strcmp(variant, "cp")) {    // dirfd-relative, /proc link
        fd = openat(dirfd_, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0644); if (fd < 0) die("openat");
        if (pwrite(fd, buf, 4096, 0) != 4096) die("pwrite");
        tag(fd);
        snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
        if (linkat(AT_FDCWD, src, dirfd_, name, AT_SYMLINK_FOLLOW)) die("linkat");
    } else if (!strcmp(variant, "d")) {     // named .part O_EXCL + renameat2 NOREPLACE, full paths
        snprintf(part, sizeof part, "%s.part", path);
        fd = open(part, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0644); if (fd < 0) die("open part");
        if (pwrite(fd, buf, 4096, 0) != 4096) die("pwrite");
        tag(fd);
        if (syscall(SYS_renameat2, AT_FDCWD, part, AT_FDCWD, path, 1)) die("renameat2");
    } else if (!strcmp(variant, "dd")) {    // named .part, dirfd-relative
        snprintf(pname, sizeof pname, "%s.part", name);
        fd = openat(dirfd_, pname, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0644); if (fd < 0) die("open part");
        if (pwrite(fd, buf, 4096, 0) != 4096) die("pwrite");
        tag(fd);
        if (syscall(SYS_renameat2, dirfd_, pname, dirfd_, name, 1)) die("renameat2");
    } else if (!strcmp(variant, "e")) {     // curl: open O_CREAT + write
        fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644); if (fd < 0) die("open");
        if (write(fd, buf, 4096) != 4096) die("write");
        tag(fd);
    } else if (!strcmp(variant, "ex")) {    // O_CREAT|O_EXCL, as Haul would open a final name directly
        fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0644); if (fd < 0) die("open");
        if (pwrite(fd, buf, 4096, 0) != 4096) die("pwrite");
        tag(fd);
    } else { fprintf(stderr, "unknown way %s\n", variant); exit(2); }
    close(fd);
}

static void *thread_link(void *arg) {
    int fd = *(int *)arg;
    *(int *)arg = linkat(fd, "", AT_FDCWD, "xthread", AT_EMPTY_PATH) ? -errno : 0;
    return NULL;
}

static const char *variant_;
static int nthreads = 1;
static void *worker(void *arg) {
    long t = (long)arg;
    for (int i = (int)t; i < n; i += nthreads) one(variant_, i);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: naming WAY DIRECTORY [x] [s] | naming probe DIRECTORY\n"); return 2; }
    dir = argv[2];
    if (!strcmp(argv[1], "probe")) {
        if (chdir(dir)) die("chdir");
        int fd = open(".", O_TMPFILE | O_RDWR, 0644); if (fd < 0) die("open");
        int r = linkat(fd, "", AT_FDCWD, "xsame", AT_EMPTY_PATH);
        printf("uid %d same thread: %s\n", getuid(), r ? strerror(errno) : "ok");
        int fd2 = open(".", O_TMPFILE | O_RDWR, 0644); int arg = fd2; pthread_t t;
        pthread_create(&t, NULL, thread_link, &arg); pthread_join(t, NULL);
        printf("uid %d other thread: %s\n", getuid(), arg ? strerror(-arg) : "ok");
        // a descriptor of a file opened by a path (not O_TMPFILE)
        int fd3 = open("xsame", O_RDONLY); r = fd3 >= 0 ? linkat(fd3, "", AT_FDCWD, "xnamed", AT_EMPTY_PATH) : -1;
        printf("uid %d named file: %s\n", getuid(), r ? strerror(errno) : "ok");
        unlink("xsame"); unlink("xthread"); unlink("xnamed");
        return 0;
    }
    for (int k = 3; k < argc; k++) { if (!strcmp(argv[k], "x")) use_xattr = 1; if (!strcmp(argv[k], "s")) use_fstat = 1; }
    if (getenv("N")) n = atoi(getenv("N"));
    memset(buf, 'x', sizeof buf);
    dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); if (dirfd_ < 0) die("open dir");
    struct rusage r0, r1; struct timespec t0, t1;
    getrusage(RUSAGE_SELF, &r0); clock_gettime(CLOCK_MONOTONIC, &t0);
    variant_ = argv[1];
    if (getenv("T")) nthreads = atoi(getenv("T"));
    pthread_t th[16];
    for (long t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    getrusage(RUSAGE_SELF, &r1); clock_gettime(CLOCK_MONOTONIC, &t1);
    double u = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) * 1e3 + (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e3;
    double s = (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e3 + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e3;
    double w = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("%s%s%s T%d cpu %.1f ms (user %.1f sys %.1f) wall %.1f\n", argv[1], use_xattr ? "+x" : "", use_fstat ? "+s" : "", nthreads, u + s, u, s, w);
    return 0;
}
