#!/usr/bin/env python3
"""One big file over plain HTTP: Haul against its floor and curl, wall time and CPU per GiB.

The floor is Benchmarks/floor.c, compiled here with cc: N threads, one connection each with a Range request,
blocking calls, the body spliced into a preallocated file (and the variants that say what the file costs:
without unwritten extents, into /dev/null, recv and drop like `curl -o /dev/null`, recv + pwrite; and the
event-loop shapes: one thread with epoll like Haul's loop, and that loop with the pipe -> file copy on a
second thread).

Starts its own nginx (1 worker, sendfile, on a free port of 127.0.0.1) over a data directory holding one
file of --size-mib MiB, runs the tools interleaved (A B C ... B C A ...) for --rounds rounds (wall clock, and CPU from wait4's rusage),
checks every output against the source (cmp) and prints medians: wall, user, sys, CPU s per GiB, MB/s, and
the nginx worker's CPU during the run (read from /proc), then the ratios to `curl -o /dev/null`.

Each output is deleted as soon as it is checked: one file, not thousands (the ext4 slowdown after mass
deletions does not apply), and a file deleted before its dirty pages are written back is never written to
disk, so no run pays for the previous run's write-back (the kernel flushes dirty pages after 30 s).

Usage: Benchmarks/bigfile.py --haul .build/release/haul --work DIR [--rounds 5] [--size-mib 1024]
       [--connections 8] [--only LABEL,...] [--haul-extra ARG ...] [--perf-stat]
Everything lives in DIR (created; removed at the end unless --keep). Only processes it started are signalled.
"""
import argparse, os, shutil, signal, socket, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def clock_ticks(pid):
    """utime + stime of a process, in clock ticks (its threads included)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class Nginx:
    def __init__(self, root, data):
        self.port = free_port()
        user = "user root;" if os.geteuid() == 0 else ""
        with open(f"{root}/nginx.conf", "w") as f:
            f.write(f"""
daemon off; worker_processes 1; {user}
error_log {root}/error.log; pid {root}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off; sendfile on; tcp_nopush on; keepalive_requests 100000;
  client_body_temp_path {root}/t1; proxy_temp_path {root}/t2; fastcgi_temp_path {root}/t3;
  uwsgi_temp_path {root}/t4; scgi_temp_path {root}/t5;
  server {{ listen 127.0.0.1:{self.port}; root {data}; }}
}}
""")
        self.process = subprocess.Popen(["nginx", "-c", f"{root}/nginx.conf", "-p", root],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        if self.process.poll() is not None:
            raise SystemExit(f"nginx did not start: {open(f'{root}/error.log').read()[-2000:]}")
        self.workers = [int(p) for p in open(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read().split()]

    def ticks(self):
        return sum(clock_ticks(pid) for pid in self.workers)

    def stop(self):
        self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            for pid in self.workers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.process.kill()
            self.process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--haul", required=True)
    parser.add_argument("--haul-before", help="another build of haul, measured beside --haul")
    parser.add_argument("--work", required=True, help="directory for the data, nginx and outputs (on the disk to measure)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--only", help="comma-separated labels (prefixes) to run")
    parser.add_argument("--pipe-bytes", type=int, default=256 << 10,
                        help="the floor's pipe size (Haul's ConnectionOptions.splicePipeSize: 256 KiB)")
    parser.add_argument("--fifo", action="store_true",
                        help="run the tools and the nginx worker under SCHED_FIFO (chrt -f 10; root): on a machine "
                             "loaded by others, the runs then look like quiet ones")
    parser.add_argument("--keep", action="store_true", help="keep DIR (the data) at the end")
    args = parser.parse_args()

    work = os.path.abspath(args.work)
    os.makedirs(f"{work}/data", exist_ok=True)
    os.makedirs(f"{work}/out", exist_ok=True)
    size = args.size_mib << 20
    source = f"{work}/data/big.bin"
    if not os.path.exists(source) or os.path.getsize(source) != size:
        with open("/dev/urandom", "rb") as r, open(source, "wb") as w:
            for _ in range(args.size_mib):
                w.write(r.read(1 << 20))
    floor = f"{work}/floor"
    subprocess.run(["cc", "-O2", "-pthread", "-o", floor, f"{HERE}/floor.c"], check=True)
    nginx = Nginx(work, f"{work}/data")
    url = f"http://127.0.0.1:{nginx.port}/big.bin"
    if args.fifo:
        for pid in nginx.workers:
            subprocess.run(["chrt", "-f", "-p", "10", str(pid)], check=True)
    n = str(args.connections)
    out = f"{work}/out/o"
    fl = lambda mode, output=True, pipe=args.pipe_bytes, n=n: [floor, mode, "127.0.0.1", str(nginx.port), "/big.bin", str(size), n] + \
        ([out] if output else ["-"]) + [str(pipe)]
    tools = [(f"haul -c{n} --no-sync", [args.haul, "-q", "-c", n, "--no-sync", url, "-o", out], True)]
    if args.haul_before:
        tools.append((f"haul-before -c{n} --no-sync", [args.haul_before, "-q", "-c", n, "--no-sync", url, "-o", out], True))
    tools += [
        (f"floor splice-file -c{n}", fl("splice-file"), True),
        (f"floor splice-file -c{n} 1 MiB pipe", fl("splice-file", pipe=1 << 20), True),
        ("floor splice-file -c1", fl("splice-file", n="1"), True),
        (f"floor loop-file -c{n}", fl("loop-file"), True),
        (f"floor loop-writer -c{n}", fl("loop-writer"), True),
        (f"floor splice-sparse -c{n}", fl("splice-sparse"), True),
        (f"floor recv-pwrite -c{n}", fl("recv-pwrite"), True),
        (f"floor splice-null -c{n}", fl("splice-null", False), False),
        (f"floor recv -c{n}", fl("recv", False), False),
        ("curl -o /dev/null", ["curl", "-s", "-o", "/dev/null", url], False),
        ("curl -o FILE", ["curl", "-s", "-o", out, url], True),
    ]
    if args.only:
        wanted = args.only.split(",")
        tools = [t for t in tools if any(t[0].startswith(w) for w in wanted)]
    # Warm the source into the page cache (nginx sends it from there).
    subprocess.run(["cat", source], stdout=subprocess.DEVNULL, check=True)
    results = {label: [] for label, _, _ in tools}
    tick = os.sysconf("SC_CLK_TCK")
    try:
        for round_ in range(args.rounds):
            # Each round starts one tool later: no tool always follows the same one (the deletion of a 1 GiB
            # output, the run that warmed or cooled the caches).
            for label, command, writes in tools[round_ % len(tools):] + tools[:round_ % len(tools)]:
                before = nginx.ticks()
                start = time.monotonic()
                process = subprocess.Popen((["chrt", "-f", "10"] if args.fifo else []) + command, stdout=subprocess.DEVNULL)
                _, status, usage = os.wait4(process.pid, 0)
                wall = time.monotonic() - start
                process.returncode = code = os.waitstatus_to_exitcode(status)
                nginx_cpu = (nginx.ticks() - before) / tick
                user, system = usage.ru_utime, usage.ru_stime
                ok = code == 0
                if writes:
                    ok = ok and os.path.exists(out) and subprocess.run(["cmp", "-s", source, out]).returncode == 0
                    for leftover in os.listdir(f"{work}/out"):
                        os.remove(f"{work}/out/{leftover}")
                if not ok:
                    print(f"{label}: FAILED (exit {code})", file=sys.stderr)
                    continue
                results[label].append((wall, user, system, nginx_cpu))
                print(f"round {round_ + 1} {label}: {wall:.2f} s wall, {user:.2f} user, {system:.2f} sys, nginx {nginx_cpu:.2f}",
                      file=sys.stderr)
                time.sleep(0.5)
    finally:
        nginx.stop()
    gib = size / (1 << 30)
    rows = {}
    for label, runs in results.items():
        if not runs:
            continue
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median((r[1] + r[2]) / gib for r in runs)
        rows[label] = (wall, statistics.median(r[1] for r in runs), statistics.median(r[2] for r in runs), cpu,
                       size / wall / 1e6, statistics.median(r[3] for r in runs),
                       statistics.median((r[1] + r[2] + r[3]) / gib for r in runs), len(runs))
    reference = rows.get("curl -o /dev/null")
    print(f"\n{args.size_mib} MiB over {n} connections (curl: 1), medians of {args.rounds} interleaved rounds\n")
    print("| tool | wall s | user s | sys s | CPU s/GiB | MB/s | nginx CPU s | tool + nginx s/GiB | × curl -o /dev/null (speed) | × its CPU/GiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, (wall, user, system, cpu, rate, ncpu, both, count) in rows.items():
        ratio = f"{reference[0] / wall:.2f}" if reference else "-"
        cpu_ratio = f"{cpu / reference[3]:.2f}" if reference else "-"
        print(f"| {label} | {wall:.3f} | {user:.3f} | {system:.3f} | {cpu:.3f} | {rate:,.0f} | {ncpu:.2f} | {both:.3f} | {ratio} | {cpu_ratio} |"
              + ("" if count == args.rounds else f" ({count} runs)"))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
