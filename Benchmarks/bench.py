#!/usr/bin/env python3
"""Runs the download scenarios for Haul and its peers and prints one markdown table.

Each measurement runs the tool under GNU time (wall, user+sys CPU, peak RSS), checks every output's
SHA-256, and deletes them. Tools are interleaved (A B C A B C ...) and medians of the rounds are reported,
because these machines are shared and noisy. A tool whose command fails (non-zero exit, missing or wrong
output) is reported as failed in the table; the run goes on.

Scenarios: (a) one big file over HTTP, (b) the same over HTTPS, (c) 128 MiB through limit_rate 20m per
connection, (d) 200 files of 256 KiB, 16 at a time, over HTTP and HTTPS, (e) the big file interrupted at
50% (SIGKILL) and resumed: time to finish and bytes fetched again. BENCH_DEBUG=1 prints each request
(e) logged.
"""
import argparse, hashlib, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time, urllib.request

MiB = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(4 * MiB), b""):
            h.update(block)
    return h.hexdigest()


def make_file(path, size, seed):
    block = hashlib.sha256(str(seed).encode()).digest() * (MiB // 32)
    with open(path, "wb") as f:
        written = 0
        counter = 0
        while written < size:
            chunk = bytes([counter & 0xFF]) + block[1:]
            f.write(chunk[: size - written])
            written += len(chunk)
            counter += 1


class Nginx:
    def __init__(self, root, data):
        self.root = root
        self.http = free_port()
        self.https = free_port()
        self.resume_log = f"{root}/resume.log"
        ca_key, ca_pem = f"{root}/ca.key", f"{root}/ca.pem"
        key, csr, pem = f"{root}/server.key", f"{root}/server.csr", f"{root}/server.pem"
        run = lambda *a: subprocess.run(a, check=True, capture_output=True)
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca_pem,
            "-days", "2", "-subj", "/CN=haul bench CA")
        run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
        with open(f"{root}/san.ext", "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        run("openssl", "x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key, "-CAcreateserial",
            "-out", pem, "-days", "2", "-extfile", f"{root}/san.ext")
        self.ca = ca_pem
        user = "user root;" if os.geteuid() == 0 else ""
        # /resume/ (scenario e): a request carrying "X-Bench-Rate: N" is sent at N bytes/s (limit_rate takes
        # variables since nginx 1.17); one without it is not throttled. Only this location logs, one line
        # per request with the bytes nginx wrote for it, so that the two halves of a resume can be told
        # apart (the header is "-" in the unthrottled second run) and counted. sendfile_max_chunk keeps the
        # throttled sends small (nginx sleeps chunk/rate after each), so connections that started together
        # do not release one big burst each at the same moment.
        conf = f"""
daemon off; worker_processes 1; {user}
error_log {root}/error.log; pid {root}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off; sendfile on; tcp_nopush on; keepalive_requests 100000;
  client_body_temp_path {root}/t1; proxy_temp_path {root}/t2; fastcgi_temp_path {root}/t3;
  uwsgi_temp_path {root}/t4; scgi_temp_path {root}/t5;
  map $http_x_bench_rate $bench_rate {{ default 0; "~^[0-9]+$" $http_x_bench_rate; }}
  log_format resume '$msec $connection $http_x_bench_rate $status $bytes_sent "$http_range"';
  server {{
    listen 127.0.0.1:{self.http}; listen 127.0.0.1:{self.https} ssl;
    ssl_certificate {pem}; ssl_certificate_key {key};
    root {data};
    location /limited/ {{ alias {data}/; limit_rate 20m; }}
    location /resume/ {{
      alias {data}/; limit_rate $bench_rate; sendfile_max_chunk 256k; access_log {self.resume_log} resume;
    }}
    location = /nginx-status {{ stub_status; }}
  }}
}}
"""
        with open(f"{root}/nginx.conf", "w") as f:
            f.write(conf)
        self.process = subprocess.Popen(["nginx", "-c", f"{root}/nginx.conf", "-p", root],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for port in (self.http, self.https):
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)
        if self.process.poll() is not None:
            raise SystemExit(f"nginx did not start: {open(f'{root}/error.log').read()[-2000:]}")

    def url(self, path, tls=False):
        return f"https://localhost:{self.https}{path}" if tls else f"http://127.0.0.1:{self.http}{path}"

    def bytes_written(self):
        """Bytes the worker has written so far: /proc/PID/io wchar counts sendfile and writev alike. None
        when /proc does not let us read it."""
        try:
            master = self.process.pid
            total = 0
            for pid in open(f"/proc/{master}/task/{master}/children").read().split():
                for line in open(f"/proc/{pid}/io"):
                    if line.startswith("wchar:"):
                        total += int(line.split()[1])
            return total
        except OSError:
            return None

    def wait_idle(self, timeout=10):
        """Until only our own status request is connected (every tool's connection is closed and logged)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = urllib.request.urlopen(self.url("/nginx-status"), timeout=2).read().decode()
            if status.startswith("Active connections: 1 "):
                return
            time.sleep(0.02)
        print(f"nginx still has connections after {timeout} s", file=sys.stderr)

    def stop(self):
        self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()


def leftovers(path):
    """The output and every side file a tool keeps next to it (Haul's part and journal, aria2c's control
    file, axel's state file)."""
    return [path + suffix for suffix in ("", ".part", ".part.haul", ".part.haul.tmp", ".aria2", ".st")]


def remove(paths):
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)


def timed(command):
    """Runs command under GNU time: (wall s, user+sys CPU s, peak RSS MiB); RuntimeError if it fails."""
    fd, timing = tempfile.mkstemp()
    os.close(fd)
    start = time.monotonic()
    try:
        result = subprocess.run(["/usr/bin/time", "-o", timing, "-f", "%U %S %M"] + command,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.monotonic() - start
        fields = open(timing).read().split()[-3:]
    finally:
        os.remove(timing)
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({result.returncode}): {result.stderr.decode(errors='replace')[-400:]}")
    user, system, rss = fields
    return wall, float(user) + float(system), int(rss) / 1024


def verify(command, outputs):
    for path, digest in outputs:
        if not os.path.exists(path):
            raise RuntimeError(f"{' '.join(command)}: {path} was not written")
        if sha256(path) != digest:
            raise RuntimeError(f"{' '.join(command)}: {path}: SHA-256 mismatch")


def measure(command, outputs, scratch=None):
    """outputs: [(path, sha256)] to check after the run (empty for a reference writing to /dev/null).
    scratch: a directory created empty before the run and removed after it."""
    if scratch:
        remove([scratch])
        os.makedirs(scratch)
    for path, _ in outputs:
        remove(leftovers(path))
    sample = timed(command)
    verify(command, outputs)
    for path, _ in outputs:
        remove(leftovers(path))
    if scratch:
        remove([scratch])
    return sample


def fmt_rows(rows):
    lines = ["| scenario | tool | median wall s | MB/s | CPU s/GiB | peak RSS MiB | Haul vs best peer |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "failed" in r:
            lines.append(f"| {r['scenario']} | {r['tool']} | failed {r['failed']} of {r['rounds']} | | | | |")
        else:
            lines.append(f"| {r['scenario']} | {r['tool']} | {r['wall']:.3f} | {r['rate']:.0f}{r.get('extra', '')} | "
                         f"{r['cpu']:.2f} | {r['rss']:.1f} | {r.get('ratio', '')} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--haul", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenarios", default="a,b,c,d,e")
    parser.add_argument("--size-mib", type=int, default=1024, help="size of the big file of (a), (b) and (e)")
    parser.add_argument("--small-files", type=int, default=200, help="number of files in (d)")
    parser.add_argument("--resume-signal", default="KILL", choices=["KILL", "INT", "TERM"],
                        help="how (e) interrupts the first half")
    args = parser.parse_args()
    scenarios = set(args.scenarios.split(","))
    unknown = scenarios - set("abcde")
    if unknown:
        parser.error(f"unknown scenarios: {','.join(sorted(unknown))} (choose from a,b,c,d,e)")

    work = tempfile.mkdtemp(prefix="haul-bench-")
    data, out = f"{work}/data", f"{work}/out"
    os.makedirs(data); os.makedirs(out)
    big, limited = args.size_mib * MiB, 128 * MiB
    sums = {}
    if scenarios & set("abe"):
        make_file(f"{data}/big.bin", big, 1)
        sums["big"] = sha256(f"{data}/big.bin")
    if "c" in scenarios:
        make_file(f"{data}/limited.bin", limited, 2)
        sums["limited"] = sha256(f"{data}/limited.bin")
    small_size, small_names = 256 * 1024, [f"f{i:03d}.bin" for i in range(args.small_files)]
    if "d" in scenarios:
        os.makedirs(f"{data}/small")
        for i, name in enumerate(small_names):
            make_file(f"{data}/small/{name}", small_size, 1000 + i)
            sums[name] = sha256(f"{data}/small/{name}")
        assert len({sums[n] for n in small_names}) == len(small_names), "small files are not distinct"
    nginx = Nginx(work, data)
    haul = args.haul
    o = f"{out}/file"
    rows, resume_rows = [], []
    try:
        def scenario(name, size, tools, reference=(), scratch=None, files=None):
            """tools: [(label, command, outputs)]. Reference rows are not peers: no ratio is computed against them."""
            results = {label: [] for label, _, _ in tools}
            failures = {}
            for _ in range(args.rounds):
                for label, command, outputs in tools:
                    try:
                        results[label].append(measure(command, outputs, scratch))
                    except RuntimeError as error:
                        # A peer that crashes (axel does, now and then), or a Haul option that does not
                        # exist yet, is reported, not fatal.
                        failures[label] = failures.get(label, 0) + 1
                        print(f"{name}: {label}: {error}", file=sys.stderr)
            peers = [l for l, _, _ in tools if not l.startswith("haul") and l not in reference and results[l]]
            summary = {}
            for label, samples in results.items():
                if samples:
                    wall = statistics.median(s[0] for s in samples)
                    summary[label] = dict(wall=wall, rate=size / wall / 1e6, cpu=statistics.median(s[1] for s in samples) / (size / 2**30),
                                          rss=max(s[2] for s in samples))
            best_peer = min((summary[p]["wall"] for p in peers), default=None)
            for label, _, _ in tools:
                if label in failures:
                    rows.append(dict(scenario=name, tool=label, failed=failures[label], rounds=args.rounds))
                if label in summary:
                    row = dict(scenario=name, tool=label, **summary[label])
                    if best_peer and label.startswith("haul"):
                        row["ratio"] = f"{best_peer / row['wall']:.2f}x"
                    if files:
                        row["extra"] = f" ({files / row['wall']:.0f} files/s)"
                    rows.append(row)
            return summary

        one = lambda digest: [(o, digest)]
        if "a" in scenarios:
            url = nginx.url("/big.bin")
            scenario(f"(a) {args.size_mib} MiB HTTP", big, [
                ("haul -c1 --no-sync", [haul, "-q", "-c", "1", "--no-sync", url, "-o", o], one(sums["big"])),
                ("haul -c8 --no-sync", [haul, "-q", "-c", "8", "--no-sync", url, "-o", o], one(sums["big"])),
                ("haul -c8 (durable)", [haul, "-q", "-c", "8", url, "-o", o], one(sums["big"])),
                # The memory target is stated at 16 connections on this file.
                ("haul -c16 --no-sync", [haul, "-q", "-c", "16", "--no-sync", url, "-o", o], one(sums["big"])),
                ("curl -o FILE", ["curl", "-s", "-o", o, url], one(sums["big"])),
                ("wget -O", ["wget", "-q", "-O", o, url], one(sums["big"])),
                ("aria2c -x1", ["aria2c", "-q", "-x1", "-s1", "--file-allocation=falloc", "-d", out, "-o", "file", url], one(sums["big"])),
                ("aria2c -x8", ["aria2c", "-q", "-x8", "-s8", "-k1M", "--file-allocation=falloc", "-d", out, "-o", "file", url], one(sums["big"])),
                ("aria2c -x16", ["aria2c", "-q", "-x16", "-s16", "-k1M", "--file-allocation=falloc", "-d", out, "-o", "file", url], one(sums["big"])),
                ("axel -n 8", ["axel", "-q", "-n", "8", "-o", o, url], one(sums["big"])),
                ("curl -o /dev/null (reference)", ["curl", "-s", "-o", "/dev/null", url], []),
                ("dd bs=1M conv=fdatasync (reference)", ["dd", f"if={data}/big.bin", f"of={o}", "bs=1M", "conv=fdatasync", "status=none"], one(sums["big"])),
            ], reference=["curl -o /dev/null (reference)", "dd bs=1M conv=fdatasync (reference)"])
        if "b" in scenarios:
            url = nginx.url("/big.bin", tls=True)
            scenario(f"(b) {args.size_mib} MiB HTTPS", big, [
                ("haul -c1 --no-sync", [haul, "-q", "-c", "1", "--no-sync", "--cacert", nginx.ca, url, "-o", o], one(sums["big"])),
                ("haul -c8 --no-sync", [haul, "-q", "-c", "8", "--no-sync", "--cacert", nginx.ca, url, "-o", o], one(sums["big"])),
                ("curl -o FILE", ["curl", "-s", "--cacert", nginx.ca, "-o", o, url], one(sums["big"])),
                ("wget -O", ["wget", "-q", "--ca-certificate", nginx.ca, "-O", o, url], one(sums["big"])),
                ("aria2c -x8", ["aria2c", "-q", "-x8", "-s8", "-k1M", "--ca-certificate", nginx.ca, "--file-allocation=falloc", "-d", out, "-o", "file", url], one(sums["big"])),
            ])
        if "c" in scenarios:
            # One scenario per connection count, so that Haul's ratio is to the peers using as many.
            url = nginx.url("/limited/limited.bin")
            for n in (8, 16):
                name = f"(c) 128 MiB, limit_rate 20m/conn, {n} connections"
                scenario(name, limited, [
                    (f"haul -c{n} --no-sync", [haul, "-q", "-c", str(n), "--no-sync", url, "-o", o], one(sums["limited"])),
                    (f"aria2c -x{n} -s{n} -k1M", ["aria2c", "-q", f"-x{n}", f"-s{n}", "-k1M", "--file-allocation=falloc", "-d", out, "-o", "file", url], one(sums["limited"])),
                    (f"axel -n {n}", ["axel", "-q", "-n", str(n), "-o", o, url], one(sums["limited"])),
                ])
                for row in rows:
                    if row["scenario"] == name and "failed" not in row:
                        row["extra"] = f" ({row['rate'] * 1e6 / (n * 20 * MiB) * 100:.0f}% of {n}x20 MiB/s)"
        if "d" in scenarios:
            # 200 files of 256 KiB, at most 16 transfers at a time, into an empty directory. Every tool
            # reads the same list (one URL per line, output named after the URL's last segment); curl
            # takes a config file instead. wget has no parallel mode: it fetches the list one by one over
            # one kept-alive connection, a reference for what 16-way parallelism buys.
            dest = f"{out}/small"
            total = small_size * len(small_names)
            outputs = [(f"{dest}/{name}", sums[name]) for name in small_names]
            for tls in (False, True):
                urls = [nginx.url(f"/small/{name}", tls) for name in small_names]
                suffix = "https" if tls else "http"
                listing, curl_config = f"{work}/small-{suffix}.list", f"{work}/small-{suffix}.curl"
                with open(listing, "w") as f:
                    f.writelines(u + "\n" for u in urls)
                with open(curl_config, "w") as f:
                    f.writelines(f'url = "{u}"\noutput = "{dest}/{name}"\n' for u, name in zip(urls, small_names))
                ca = lambda flag: [flag, nginx.ca] if tls else []
                scenario(f"(d) {len(small_names)} x 256 KiB {suffix.upper()}, 16 at a time", total, [
                    ("haul -i LIST -j 16", [haul, "-q", "-i", listing, "-j", "16", "-d", dest] + ca("--cacert"), outputs),
                    # Like for like: curl, aria2c and wget do not fdatasync what they write.
                    ("haul -i LIST -j 16 --no-sync", [haul, "-q", "--no-sync", "-i", listing, "-j", "16", "-d", dest] + ca("--cacert"), outputs),
                    ("curl --parallel --parallel-max 16", ["curl", "-sS", "--parallel", "--parallel-max", "16", "-K", curl_config] + ca("--cacert"), outputs),
                    ("aria2c -i LIST -j 16 -x1", ["aria2c", "-q", "-i", listing, "-j", "16", "-x1", "--file-allocation=falloc", "-d", dest] + ca("--ca-certificate"), outputs),
                    ("wget -i LIST (sequential)", ["wget", "-q", "-i", listing, "-P", dest] + ca("--ca-certificate"), outputs),
                ], scratch=dest, files=len(small_names))
        if "e" in scenarios:
            resume_rows.extend(resume_scenario(args, nginx, haul, o, out, big, sums["big"]))
    finally:
        nginx.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nMachine: {os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2**30} GiB; "
          f"{args.rounds} rounds, medians; peak RSS is the largest seen.\n")
    if rows:
        print(fmt_rows(rows))
    if resume_rows:
        print(f"\n(e) {args.size_mib} MiB over HTTP, first run throttled to {args.size_mib // 8} MiB/s in all and "
              f"interrupted with SIG{args.resume_signal} once nginx has sent 50%; second run unthrottled, timed to the end. "
              "MiB columns are nginx's $bytes_sent (access log), medians.\n")
        print("| tool (resume command) | sent before the kill MiB | resume: wall s | resume: MiB fetched | fetched twice MiB | CPU s | peak RSS MiB |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in resume_rows:
            if "failed" in r:
                print(f"| {r['tool']} | failed {r['failed']} of {r['rounds']} | | | | | |")
            else:
                print(f"| {r['tool']} | {r['first'] / MiB:.0f} | {r['wall']:.3f} | {r['second'] / MiB:.0f} | "
                      f"{r['twice'] / MiB:.0f} | {r['cpu']:.2f} | {r['rss']:.1f} |")


# Scenario (e), a resumed download. The design:
#
# - Stopping every tool at the same point. A byte count on disk does not work across tools: Haul, aria2c
#   and axel preallocate the file and fill it out of order, and what Haul counts as done is what its journal
#   says is durable. nginx's limit_rate_after does not work either: it is per request, and a tool with 8
#   ranged connections asks for eight 1/8 ranges, none of which ever reaches 512 MiB. So the harness counts
#   on the server side: the nginx worker's /proc/PID/io wchar (sendfile and writev both count) minus its
#   value when the tool started; once it reaches 50% of the file the tool gets SIGKILL (--resume-signal).
#   Polled every 10 ms, and the first run is throttled so that the overshoot is small and the same for
#   every tool: the whole transfer runs at size/8 per second (50% after about 4 s), each connection at that
#   rate divided by the tool's connection count (curl and wget 1, the others 8). The throttle is a request
#   header, X-Bench-Rate, that the /resume/ location turns into limit_rate: the URL stays the same, which
#   Haul's journal requires (it refuses to resume a download of another URL), and the second run simply
#   leaves the header out. If /proc cannot be read, the kill falls back to the time the throttle predicts.
# - The second run is each tool's resume mode: Haul is run again with the same -o, curl -C -, wget -c,
#   aria2c -c (it needs its .aria2 control file, saved every 60 s by default, so it is also run with
#   --auto-save-interval=1, the cadence of Haul's default checkpoints), axel finds its .st state file (saved
#   every 10 s by default; no command-line option changes that). It is timed under GNU time like the other scenarios, its output's
#   SHA-256 checked.
# - What was fetched twice: /resume/ logs every request with $bytes_sent, the throttle header telling the
#   runs apart. Requests of the killed run are logged when nginx notices the dead connection, so the
#   harness waits until nginx has no connection left (stub_status) before and after the second run.
#   fetched twice = first run + second run - file size (headers included, a few hundred bytes a request).
def resume_scenario(args, nginx, haul, o, out, size, digest):
    url = nginx.url("/resume/big.bin")
    total_rate = max(MiB, size // 8)
    interrupt = getattr(signal, f"SIG{args.resume_signal}")
    header = "X-Bench-Rate"
    tools = [
        # (label, command of both runs, connections, how to add a header)
        ("haul -c8 (same command again)", [haul, "-q", "-c", "8", url, "-o", o], 8, lambda v: ["-H", f"{header}: {v}"]),
        ("curl -C - -o FILE", ["curl", "-s", "-C", "-", "-o", o, url], 1, lambda v: ["-H", f"{header}: {v}"]),
        ("wget -c -O", ["wget", "-q", "-c", "-O", o, url], 1, lambda v: [f"--header={header}: {v}"]),
        ("aria2c -c -x8 -s8 -k1M", ["aria2c", "-q", "-c", "-x8", "-s8", "-k1M", "--file-allocation=falloc", "-d", out, "-o", "file", url], 8,
         lambda v: [f"--header={header}: {v}"]),
        ("aria2c -c -x8 -s8 -k1M --auto-save-interval=1", ["aria2c", "-q", "-c", "-x8", "-s8", "-k1M", "--auto-save-interval=1", "--file-allocation=falloc", "-d", out, "-o", "file", url], 8,
         lambda v: [f"--header={header}: {v}"]),
        ("axel -n 8 (.st file)", ["axel", "-q", "-n", "8", "-o", o, url], 8, lambda v: ["-H", f"{header}: {v}"]),
    ]

    def log_entries(offset):
        entries = []
        with open(nginx.resume_log) as f:
            f.seek(offset)
            for line in f:
                fields = line.split()
                entries.append((fields[2], int(fields[4])))  # (X-Bench-Rate or "-", $bytes_sent)
        return entries

    def once(command, connections, add_header):
        remove(leftovers(o))
        nginx.wait_idle()
        offset = os.path.getsize(nginx.resume_log) if os.path.exists(nginx.resume_log) else 0
        rate = max(1024, total_rate // connections)
        base = nginx.bytes_written()
        start = time.monotonic()
        first = subprocess.Popen(command[:1] + add_header(rate) + command[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            while True:
                if first.poll() is not None:
                    raise RuntimeError(f"{command[0]} ended ({first.returncode}) before it reached 50%: {first.stderr.read().decode(errors='replace')[-300:]}")
                written = nginx.bytes_written()
                sent = written - base if written is not None and base is not None else (time.monotonic() - start) * total_rate
                if sent >= size / 2:
                    break
                if time.monotonic() - start > 60 + 20 * size / total_rate:
                    raise RuntimeError(f"{command[0]} did not reach 50% in time ({sent / MiB:.0f} MiB)")
                time.sleep(0.01)
        finally:
            if first.poll() is None:
                first.send_signal(interrupt)
            first.wait()
            first.stderr.close()
        nginx.wait_idle()
        wall, cpu, rss = timed(command)
        verify(command, [(o, digest)])
        nginx.wait_idle()
        entries = log_entries(offset)
        if os.environ.get("BENCH_DEBUG"):
            print(f"{command[0]}: sent at kill {sent / MiB:.1f} MiB; requests: {entries}", file=sys.stderr)
        first_bytes = sum(b for tag, b in entries if tag != "-")
        second_bytes = sum(b for tag, b in entries if tag == "-")
        remove(leftovers(o))
        return dict(wall=wall, cpu=cpu, rss=rss, first=first_bytes, second=second_bytes,
                    twice=first_bytes + second_bytes - size)

    results = {label: [] for label, *_ in tools}
    failures = {}
    for _ in range(args.rounds):
        for label, command, connections, add_header in tools:
            try:
                results[label].append(once(command, connections, add_header))
            except RuntimeError as error:
                failures[label] = failures.get(label, 0) + 1
                print(f"(e): {label}: {error}", file=sys.stderr)
    rows = []
    for label, *_ in tools:
        if label in failures:
            rows.append(dict(tool=label, failed=failures[label], rounds=args.rounds))
        samples = results[label]
        if samples:
            row = {key: statistics.median(s[key] for s in samples) for key in ("wall", "cpu", "first", "second", "twice")}
            row.update(tool=label, rss=max(s["rss"] for s in samples))
            rows.append(row)
    return rows


if __name__ == "__main__":
    main()
