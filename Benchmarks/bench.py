#!/usr/bin/env python3
"""Runs the download scenarios for Haul and its peers, prints markdown tables, saves the raw results as
JSON and draws them as charts.

Each measurement runs the tool under GNU time (wall, user+sys CPU, peak RSS), checks every output's
SHA-256, and deletes them. Tools are interleaved (A B C A B C ...) and medians of the rounds are reported,
because these machines are shared and noisy. A tool whose command fails (non-zero exit, missing or wrong
output) is reported as failed in the table; the run goes on.

Scenarios: (a) one big file over HTTP, (b) the same over HTTPS, (c) 128 MiB through a pacer of 20 MiB/s per
TCP connection (Benchmarks/pacer.c, checked first: 1, 2 and 16 connections through it), at 1, 8 and 16
connections, (d) 200 files of 256 KiB, 16 at a time, over HTTP and HTTPS, (e) the big file interrupted at
50% (SIGKILL) and resumed: time to finish and bytes fetched again, (f) 10,000 files of 4 KiB, 16 at a time
(and Haul's peak RSS at 1,000 of them: flat in the list's length?), then the same 10,000 over HTTPS (with
the TLS handshakes each run made, full and resumed), (g) one 16 GiB file (throughput and peak RSS against
the big file of (a)), (h) peak RSS by connection count on the big file, (p) the response head parser
(haul-parser-benchmark). After the run: the issue 16 targets, computed, with met / not met.
In (d) and (f) Haul's durable default also has durable peers: curl followed by `sync -f DIR`, timed
together, and wget2 with `--fsync-policy=on` (aria2c, wget and axel have no option to sync their files). Every
scenario starts after a `sync`, and in (d) and (f) so does every run: what a run before left dirty is
neither flushed by the next tool's sync nor turns Haul's shared flush off (docs/benchmarks.md, "Durable small
files against a durable peer"). BENCH_DEBUG=1 prints each request (e) logged.

Everything the run creates lives in one temporary directory (TMPDIR decides where), removed at the end,
also on failure, Ctrl-C (SIGINT), SIGTERM and SIGHUP; every tool runs in its own process group, which is
killed if the run is interrupted while it runs. Only processes this script started are ever signalled.

Raw results: Benchmarks/results/run-DATE.json and latest.json (not in git); charts: docs/benchmarks/*.svg.
`--charts-only FILE.json` prints the tables and redraws the charts from a saved run without measuring.
"""
import argparse, hashlib, json, os, re, shutil, signal, socket, statistics, struct, subprocess, sys, tempfile, time
import urllib.request

MiB = 1 << 20
GiB = 1 << 30
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL_SCENARIOS = "a,b,c,d,e,f,g,h,x,m,p"
CONNECTION_COUNTS = (1, 2, 4, 8, 16, 32)


def free_ports(count):
    """count different ports that were free on 127.0.0.1 a moment ago. All are held bound until the last is
    chosen: released one by one, the kernel may hand out the same port twice (nginx then fails with
    "duplicate listen"; two servers started together would fight over one port)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            sockets.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


_hash_buffer = bytearray(8 * MiB)


def sha256(path):
    """8 MiB reads into one reused buffer: hashlib (OpenSSL, SHA extensions) runs at ~1.3 GB/s here, about
    3x sha256sum; a 16 GiB output is still ~13 s of CPU, which is why (g) hashes its source only once."""
    h = hashlib.sha256()
    view = memoryview(_hash_buffer)
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(_hash_buffer)
            if not n:
                break
            h.update(view[:n])
    return h.hexdigest()


def make_file(path, size, seed):
    """Writes size bytes and returns their SHA-256, computed while writing (no second pass over a 16 GiB
    file). The content repeats a block derived from seed, but every MiB starts with its own index and the
    seed, so no two MiB of one file and no two files of different seeds are alike: a range written at the
    wrong offset, or a file under another's name, changes the digest."""
    digest = hashlib.sha256(str(seed).encode()).digest()
    piece = min(size, 8 * MiB)
    buffer = bytearray(digest * (-(-piece // 32)))
    del buffer[piece:]
    view = memoryview(buffer)
    h = hashlib.sha256()
    counter = 0
    with open(path, "wb") as f:
        written = 0
        while written < size:
            n = min(piece, size - written)
            for offset in range(0, n, MiB):
                if offset + 16 <= n:
                    struct.pack_into("<QQ", buffer, offset, counter, seed)
                counter += 1
            f.write(view[:n])
            h.update(view[:n])
            written += n
    return h.hexdigest()


class Nginx:
    def __init__(self, root, data):
        self.root = root
        self.http, self.https = free_ports(2)
        self.resume_log = f"{root}/resume.log"
        self.handshake_log = f"{root}/handshakes.log"
        self.handshake_offset = 0
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
  # One line per connection (its first request): whether its TLS handshake resumed a session ("r") or was
  # full ("."); what the HTTPS variant of (f) counts per tool.
  map $connection_requests $first_request {{ 1 1; default 0; }}
  log_format handshake '$scheme $ssl_session_reused';
  server {{
    listen 127.0.0.1:{self.http}; listen 127.0.0.1:{self.https} ssl;
    ssl_certificate {pem}; ssl_certificate_key {key}; ssl_protocols TLSv1.2 TLSv1.3;
    access_log {self.handshake_log} handshake if=$first_request;
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

    def handshakes(self):
        """(full, resumed) TLS handshakes since the previous call: nginx logs each connection's first request
        (once that request ends, so call this after the tool has exited)."""
        try:
            with open(self.handshake_log) as f:
                f.seek(self.handshake_offset)
                lines = f.read().splitlines()
                self.handshake_offset = f.tell()
        except FileNotFoundError:
            return 0, 0
        tls = [line.split() for line in lines if line.startswith("https ")]
        resumed = sum(1 for fields in tls if fields[1:] == ["r"])
        return len(tls) - resumed, resumed

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
        try:
            workers = [int(p) for p in open(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read().split()]
        except OSError:
            workers = []
        self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            # Killing the master alone would leave its worker (our grandchild) running.
            for pid in workers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.process.kill()
            self.process.wait()


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


# Where finished many-file outputs go until the whole run ends. ext4 without a journal (this machine's root)
# will not reuse an inode freed in the last ~30 s and walks the free inodes for every new file, so deleting
# the last run's 10,000 files right before the next run charged every tool a per-file cost that grew with
# the list (issue 23: the "CPU per file grows with n" was this). Renaming the directory away frees nothing.
GRAVEYARD = None


def retire(path):
    """Moves a scratch directory of many small files out of the way without freeing its inodes until the run
    ends (see GRAVEYARD); removes it at once when there is no graveyard."""
    if GRAVEYARD is None or not os.path.isdir(path):
        remove([path])
        return
    os.makedirs(GRAVEYARD, exist_ok=True)
    os.rename(path, os.path.join(GRAVEYARD, str(len(os.listdir(GRAVEYARD)))))


def run_own_group(argv, **kwargs):
    """Runs argv in a process group of its own and waits; if the wait is interrupted (Ctrl-C, SIGTERM), kills
    that group (GNU time and the tool under it, nothing else) before passing the interruption on."""
    process = subprocess.Popen(argv, start_new_session=True, **kwargs)
    try:
        out, err = process.communicate()
    except BaseException:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        raise
    return process.returncode, out, err


def timed(command):
    """Runs command under GNU time: (wall s, user+sys CPU s, peak RSS MiB); RuntimeError if it fails."""
    fd, timing = tempfile.mkstemp()
    os.close(fd)
    start = time.monotonic()
    try:
        returncode, _, stderr = run_own_group(["/usr/bin/time", "-o", timing, "-f", "%U %S %M"] + command,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.monotonic() - start
        fields = open(timing).read().split()[-3:]
    finally:
        os.remove(timing)
    if returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({returncode}): {stderr.decode(errors='replace')[-400:]}")
    user, system, rss = fields
    return wall, float(user) + float(system), int(rss) / 1024


def verify(command, outputs):
    for path, digest in outputs:
        if not os.path.exists(path):
            raise RuntimeError(f"{' '.join(command)}: {path} was not written")
        if sha256(path) != digest:
            raise RuntimeError(f"{' '.join(command)}: {path}: SHA-256 mismatch")


def dirty_bytes():
    """The machine's dirty and under-write-back bytes (/proc/meminfo), or None."""
    try:
        fields = dict(line.split(":", 1) for line in open("/proc/meminfo"))
        return sum(int(fields[name].split()[0]) * 1024 for name in ("Dirty", "Writeback"))
    except (OSError, KeyError, ValueError):
        return None


def settle():
    """Writes back the machine's dirty data (`sync`), so that a run starts clean: what the tool before it left
    dirty (a 1 GiB file of (a), the 40 MB of 10,000 small files) is not flushed by the next tool's sync and
    does not switch Haul's durable batches to one `fdatasync` per file (its guard against waiting for others'
    data, FlushPlan). The `sync` itself is not timed."""
    os.sync()


def measure(command, outputs, scratch=None, settled=False):
    """outputs: [(path, sha256)] to check after the run (empty for a reference writing to /dev/null).
    scratch: a directory created empty before the run and removed after it. settled: settle() first (the
    small-file scenarios, where the previous run's outputs are dirty still and a durable tool would flush
    them or, Haul, give up its shared flush)."""
    if settled:
        settle()
    if scratch:
        remove([scratch])
        os.makedirs(scratch)
    for path, _ in outputs:
        remove(leftovers(path))
    try:
        sample = timed(command)
        verify(command, outputs)
    finally:
        # Also after a failure: a wrong 16 GiB output must not stay on the disk until the end of the run.
        if scratch:
            retire(scratch)
        for path, _ in outputs:
            if not (scratch and path.startswith(scratch.rstrip("/") + "/")):
                remove(leftovers(path))
    return sample


class Runner:
    """Runs scenarios (tools interleaved over the rounds) and collects their rows."""

    def __init__(self, rounds):
        self.rounds = rounds
        self.rows = []

    def scenario(self, key, name, size, tools, reference=(), scratch=None, files=None, rounds=None, ratios=True, startup=(), after=None,
                 durable=()):
        """tools: [(label, command, outputs)]. Reference rows are not peers: no ratio is computed against
        them. key: a short stable name the targets and charts find the rows by. after(label): called after
        each measurement, failed or not. durable: the peers whose files are durable when they end (a tool
        followed by `sync -f`, or one that fsyncs): a durable Haul row (no `--no-sync` in its label) gets a
        second ratio, to the best of them ("durable_ratio"); the first ratio stays the one to the best peer
        of all. Before each scenario the machine's dirty data is written back (`sync`): see settle()."""
        rounds = rounds or self.rounds
        reference = list(reference) + list(startup)
        results = {label: [] for label, _, _ in tools}
        failures = {}
        settle()
        started = time.monotonic()
        for _ in range(rounds):
            for label, command, outputs in tools:
                try:
                    results[label].append(measure(command, outputs, scratch, settled=files is not None))
                except RuntimeError as error:
                    # A peer that crashes (axel does, now and then), or a Haul option that does not
                    # exist yet, is reported, not fatal.
                    failures[label] = failures.get(label, 0) + 1
                    print(f"{name}: {label}: {error}", file=sys.stderr)
                if after:
                    after(label)
        peers = [l for l, _, _ in tools if not l.startswith("haul") and l not in reference and results[l]]
        summary = {}
        for label, samples in results.items():
            if samples:
                wall = statistics.median(s[0] for s in samples)
                summary[label] = dict(wall=wall, rate=size / wall / 1e6, cpu=statistics.median(s[1] for s in samples) / (size / 2**30),
                                      rss=max(s[2] for s in samples), samples=samples)
        best_peer = min((summary[p]["wall"] for p in peers), default=None)
        best_durable_peer = min((summary[p]["wall"] for p in peers if p in durable), default=None)
        for label, _, _ in tools:
            base = dict(key=key, scenario=name, tool=label, rounds=rounds, bytes=size,
                        reference=label in reference)
            if files:
                base["files"] = files
            if label in startup:
                # Not a download: only its peak RSS means something.
                base["startup"] = True
            if label in failures:
                self.rows.append(dict(base, failed=failures[label]))
            if label in summary:
                row = dict(base, **summary[label])
                if ratios and best_peer and label.startswith("haul"):
                    row["ratio"] = f"{best_peer / row['wall']:.2f}x"
                if ratios and best_durable_peer and label.startswith("haul") and "--no-sync" not in label:
                    row["durable_ratio"] = f"{best_durable_peer / row['wall']:.2f}x"
                if label in durable:
                    row["durable_peer"] = True
                if files:
                    row["extra"] = f" ({files / row['wall']:.0f} files/s)"
                self.rows.append(row)
        print(f"{name}: {time.monotonic() - started:.0f} s", file=sys.stderr)
        return summary


def per_file_cost(tools, outputs, dest, files, rounds):
    """Syscalls and CPU per small file (issue 23's budget: Haul's syscalls at most curl's + 2, its CPU at most
    curl's), for each of tools on the same list: `strace -c -f` counts every syscall of every thread (one run;
    the count hardly varies), `perf stat` user and system time (median of `rounds` runs, interleaved). Each
    run's outputs are checked like the timed runs'. Returns {label: {...}}, or {"error": why} when strace or
    perf is missing."""
    missing = [t for t in ("strace", "perf") if not shutil.which(t)]
    if missing:
        return {"error": f"not installed: {', '.join(missing)}"}
    counts, cpu = {}, {label: [] for label, _, _ in tools}

    def once(argv, label):
        remove([dest])
        os.makedirs(dest)
        for path, _ in outputs:
            remove(leftovers(path))
        # As the timed runs: without it a durable run followed the run before it with its 40 MB dirty, and
        # measured the per-file path of Haul's dirty-data guard instead of its usual `syncfs` batches.
        settle()
        try:
            returncode, _, stderr = run_own_group(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if returncode != 0:
                raise RuntimeError(f"{label} failed ({returncode}): {stderr.decode(errors='replace')[-400:]}")
            verify(argv, outputs)
        finally:
            retire(dest)

    fd, report = tempfile.mkstemp()
    os.close(fd)
    try:
        for label, command, _ in tools:
            try:
                once(["strace", "-c", "-f", "-o", report] + command, label)
                text = open(report).read()
                total = [line.split() for line in text.splitlines() if line.rstrip().endswith(" total")]
                # "100.00 0.123 4 18697 1036 total": calls is the 4th column.
                calls = int(total[-1][3])
                by_call = {}
                for line in text.splitlines():
                    fields = line.split()
                    if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total" and fields[3].isdigit():
                        by_call[fields[-1]] = int(fields[3])
                counts[label] = dict(calls=calls, per_file=calls / files,
                                     top=sorted(by_call.items(), key=lambda kv: -kv[1])[:8])
            except (RuntimeError, IndexError, ValueError) as error:
                counts[label] = dict(error=str(error))
        for _ in range(rounds):
            for label, command, _ in tools:
                try:
                    once(["perf", "stat", "-x", ",", "-e", "user_time,system_time,task-clock", "-o", report] + command, label)
                    values = {}
                    for line in open(report):
                        fields = line.strip().split(",")
                        if len(fields) >= 3 and fields[0].replace(".", "", 1).isdigit():
                            values[fields[2].split(":")[0]] = float(fields[0])
                    # user_time and system_time are in ns (perf ≥ 5.19); task-clock in ms.
                    cpu[label].append((values["user_time"] / 1e9, values["system_time"] / 1e9))
                except (RuntimeError, KeyError) as error:
                    print(f"per-file cost: {label}: {error}", file=sys.stderr)
    finally:
        os.remove(report)
    out = {}
    for label, _, _ in tools:
        row = dict(counts.get(label, {}))
        if cpu[label]:
            user = statistics.median(u for u, _ in cpu[label])
            system = statistics.median(s for _, s in cpu[label])
            row.update(user_ms_per_file=user * 1e3 / files, system_ms_per_file=system * 1e3 / files,
                       cpu_ms_per_file=statistics.median(u + s for u, s in cpu[label]) * 1e3 / files, runs=len(cpu[label]))
        out[label] = row
    out["files"] = files
    return out


def fmt_per_file(results):
    cost = results.get("per_file")
    if not cost:
        return ""
    if "error" in cost:
        return f"Per-file cost not measured: {cost['error']}"
    files = cost["files"]
    lines = [f"### Cost per small file ({files:,} × 4 KiB, 16 at a time): `strace -c -f` (one run), `perf stat` (medians)", "",
             "| tool | syscalls per file | most frequent (calls per file) | user ms/file | system ms/file | CPU ms/file |",
             "|---|---:|---|---:|---:|---:|"]
    for label, row in cost.items():
        if label == "files":
            continue
        calls = f"{row['per_file']:.1f}" if "per_file" in row else row.get("error", "—")
        top = ", ".join(f"{name} {n / files:.1f}" for name, n in row.get("top", []))
        cpu = [f"{row[k]:.3f}" if k in row else "—" for k in ("user_ms_per_file", "system_ms_per_file", "cpu_ms_per_file")]
        lines.append(f"| {label} | {calls} | {top} | {' | '.join(cpu)} |")
    return "\n".join(lines)


def then_sync(command, directory):
    """command, then `sync -f directory` (a `syncfs` of the filesystem holding it) once it has exited 0, as one
    command timed together: what a user of a tool that does not sync does to have its files durable, the
    fair peer of Haul's durable default (which syncs its files before it names them)."""
    return ["sh", "-c", '"$@" && exec sync -f "$0"', directory] + command


CURL_THEN_SYNC = "curl --parallel --parallel-max 16, then sync -f DIR"
WGET2_FSYNC = "wget2 --max-threads 16 --fsync-policy=on"
# The durable peers of the small-file scenarios. aria2c, wget and axel have no option to sync what they write.
DURABLE_PEERS = (CURL_THEN_SYNC, WGET2_FSYNC)


def durable_peers(curl, listing, dest, outputs, curl_ca=(), wget2_ca=()):
    """The rows of DURABLE_PEERS for a small-file scenario: curl's command (its TLS options included) followed
    by `sync -f DEST`, and wget2 with its `--fsync-policy` (an `fsync` of each file as it closes it; its
    directory is never synced, so a name can still be lost in a crash: its data cannot)."""
    return [(CURL_THEN_SYNC, then_sync(list(curl) + list(curl_ca), dest), outputs),
            (WGET2_FSYNC, ["wget2", "-q", "--max-threads", "16", "--fsync-policy=on", "-i", listing, "-P", dest] + list(wget2_ca), outputs)]


def write_lists(work, tag, urls, names, dest):
    """One URL per line for haul, aria2c and wget; a config of url/output pairs for curl."""
    listing, curl_config = f"{work}/{tag}.list", f"{work}/{tag}.curl"
    with open(listing, "w") as f:
        f.writelines(u + "\n" for u in urls)
    with open(curl_config, "w") as f:
        f.writelines(f'url = "{u}"\noutput = "{dest}/{name}"\n' for u, name in zip(urls, names))
    return listing, curl_config


def parser_benchmark(binary):
    """Runs haul-parser-benchmark and picks Haul's ns per response head (a line with "ns/head" that does not
    name picohttpparser) and picohttpparser's (lines naming it; the fastest of its builds when it prints
    several). Where a line gives both wall and CPU time ("… ns/head wall, … ns/head CPU") the CPU figure is
    taken: it is the steadier one on a shared machine. Tolerates the format changing: what it cannot read
    stays None, and the raw lines are kept and printed."""
    result = dict(binary=binary, lines=[], haul_ns=None, pico_ns=None, pico_builds={}, kind=None)
    try:
        returncode, out, err = run_own_group([binary], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as error:
        result["error"] = str(error)
        return result
    result["lines"] = out.decode(errors="replace").splitlines()
    if returncode != 0:
        result["error"] = f"exit {returncode}: {err.decode(errors='replace')[-400:]}"
    figure = re.compile(r"([0-9][0-9,]*(?:\.[0-9]+)?)\s*ns(?:/head)?(?:\s+(wall|cpu)\b)?", re.IGNORECASE)
    for line in result["lines"]:
        lower = line.lower()
        if "ns" not in lower or "head" not in lower:
            continue
        figures = [(float(value.replace(",", "")), (kind or "").lower()) for value, kind in figure.findall(line)]
        if not figures:
            continue
        value, kind = next(((v, k) for v, k in figures if k == "cpu"), figures[0])
        if "pico" in lower:
            name = line.split(":")[0].strip() if ":" in line else line.strip()
            result["pico_builds"][name] = value
            result["pico_ns"] = min(result["pico_builds"].values())
        elif "ns/head" in lower.replace(" ", "") and result["haul_ns"] is None:
            result["haul_ns"], result["kind"] = value, kind or "as printed"
    return result


def git_commit():
    try:
        return subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


class Proxies:
    """squid (HTTP proxy, caching off) and microsocks (SOCKS5) on 127.0.0.1 for (x), each in a process group of
    its own. squid drops to the proxy user when started as root: its directory is that user's, and the
    temporary directory above it is opened for traversal only (0711)."""

    def __init__(self, work):
        self.processes = []
        directory = f"{work}/squid"
        os.makedirs(directory)
        if os.geteuid() == 0:
            os.chmod(work, 0o711)
            try:
                shutil.chown(directory, "proxy")
            except (LookupError, OSError):
                pass
        self.http, self.socks = free_ports(2)
        with open(f"{directory}/squid.conf", "w") as f:
            f.write(f"""http_port 127.0.0.1:{self.http}
pid_filename {directory}/squid.pid
access_log none
cache_log {directory}/cache.log
cache deny all
shutdown_lifetime 0 seconds
http_access allow localhost
http_access deny all
coredump_dir {directory}
""")
        self.start(["squid", "-N", "-f", f"{directory}/squid.conf"], self.http)
        self.start(["microsocks", "-i", "127.0.0.1", "-p", str(self.socks)], self.socks)

    def start(self, argv, port):
        process = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.processes.append(process)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and process.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{argv[0]} did not start listening on {port}")

    def stop(self):
        for process in self.processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                except ProcessLookupError:
                    pass


PACE_RATE = 20 * MiB  # (c): bytes/s for each client connection through the pacer
PACE_BURST = 64 * 1024


class Pacer:
    """Benchmarks/pacer.c, compiled into the run's directory and started in a process group of its own: a
    TCP proxy on 127.0.0.1 in front of nginx that sends each client connection at most `rate` bytes/s across
    all its requests (a token bucket of `burst` bytes; see the comment at the top of pacer.c). Its control
    port tells how many connections a tool opened (at most at once, in all) and, per closed connection, its
    bytes and the seconds from its first to its last byte."""

    def __init__(self, work, upstream_port, rate=PACE_RATE, burst=PACE_BURST, address="127.0.0.1"):
        self.rate, self.burst, self.address = rate, burst, address
        binary = f"{work}/pacer"
        compiler = shutil.which("cc") or shutil.which("gcc")
        if not compiler:
            raise RuntimeError("no C compiler (cc or gcc) to build Benchmarks/pacer.c")
        # (m) starts three: the first builds it.
        built = subprocess.run([compiler, "-O2", "-o", binary, f"{REPO}/Benchmarks/pacer.c", "-lm"], capture_output=True, text=True) \
            if not os.path.exists(binary) else subprocess.CompletedProcess([], 0)
        if built.returncode != 0:
            raise RuntimeError(f"Benchmarks/pacer.c did not build: {built.stderr[-600:]}")
        self.process = subprocess.Popen([binary, str(upstream_port), str(rate), str(burst), "65536", "0.1", address], start_new_session=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = self.process.stdout.readline().split()
            if len(line) != 2:
                raise RuntimeError("the pacer did not start")
        except BaseException:
            # Also Ctrl-C while it starts: the caller has no pacer to stop yet.
            self.stop()
            raise
        self.port, self.control_port = int(line[0]), int(line[1])

    def url(self, path):
        return f"http://{self.address}:{self.port}{path}"

    def command(self, word):
        with socket.create_connection((self.address, self.control_port), timeout=5) as s:
            s.sendall(word.encode() + b"\n")
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        return json.loads(answer)

    def reset(self, timeout=10):
        """Waits until every connection through the pacer has closed, then returns its counters since the
        last reset and zeroes them."""
        deadline = time.monotonic() + timeout
        while self.command("stats")["open"] and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.command("reset")

    def stop(self):
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            except ProcessLookupError:
                pass
        self.process.stdout.close()


def pacer_check(pacer, nginx, rounds):
    """The pacer's accuracy, measured before (c): 1, 2 and 16 curl processes at once, each fetching the same
    2 MiB range 8 times over one kept-alive connection (16 MiB a connection), through the pacer. Expected:
    n x rate in all, each connection at rate. Reported per case (medians of `rounds`): the rate in all from
    the clients' wall time (curl's start-up included), each connection's rate as the pacer saw it (first to
    last byte), and the connections it saw. Then the same requests on one connection straight to nginx's
    /limited/ (`limit_rate 20m`, what (c) used before): a request-per-range client is hardly slowed at all."""
    step, requests = 2 * MiB, 8
    per_connection = step * requests
    cases = []

    def curl(url, header=()):
        argv = ["curl", "-s", "-r", f"0-{step - 1}"] + list(header)
        for _ in range(requests):
            argv += ["-o", "/dev/null", url]
        return argv

    for n in (1, 2, 16):
        samples = []
        for _ in range(rounds):
            pacer.reset()
            start = time.monotonic()
            processes = [subprocess.Popen(curl(pacer.url("/limited.bin")), start_new_session=True) for _ in range(n)]
            try:
                codes = [p.wait() for p in processes]
            finally:
                for p in processes:
                    if p.poll() is None:
                        os.killpg(p.pid, signal.SIGKILL)
                        p.wait()
            wall = time.monotonic() - start
            stats = pacer.reset()
            # The bytes through the pacer are the bodies and each response's head.
            if any(codes) or not n * per_connection <= stats["bytes"] <= n * (per_connection + requests * 1024):
                raise RuntimeError(f"pacer check, {n} connections: curl exit codes {codes}, {stats['bytes']} bytes through the pacer")
            rates = [b / s / pacer.rate for b, s, *_ in stats["closed"] if s > 0]
            # The same, less the time the pacer had nothing to send (waiting for the next response: curl's,
            # the pacer's and nginx's turn-around between requests) or could not send (the client's socket
            # full): the pacer's own accuracy.
            busy = [b / (s - server - client) / pacer.rate for b, s, server, client, *_ in stats["closed"] if s - server - client > 0]
            waits = [(server + client) / s for b, s, server, client, *_ in stats["closed"] if s > 0]
            samples.append(dict(wall=wall, total=n * per_connection / wall / pacer.rate, opened=stats["opened"],
                                max_open=stats["max_open"], per_connection=statistics.median(rates), slowest=min(rates), fastest=max(rates),
                                busy=statistics.median(busy), waiting=statistics.median(waits)))
        case = {key: statistics.median(s[key] for s in samples) for key in samples[0]}
        case.update(connections=n, bytes=per_connection, requests=requests)
        cases.append(case)
    samples = []
    for _ in range(rounds):
        start = time.monotonic()
        code, _, _ = run_own_group(curl(nginx.url("/limited/limited.bin")))
        if code != 0:
            raise RuntimeError(f"pacer check, nginx limit_rate: curl exit code {code}")
        samples.append(per_connection / (time.monotonic() - start) / pacer.rate)
    return dict(rate=pacer.rate, burst=pacer.burst, cases=cases, nginx_limit_rate=statistics.median(samples), rounds=rounds)


def fmt_paced(results):
    """(c) in detail: each tool's share of the ideal and what the pacer saw of its connections."""
    rows = [r for r in results["rows"] if r["key"] in ("c1", "c8", "c16") and "failed" not in r and "ideal" in r]
    if not rows:
        return ""
    lines = ["(c) through the pacer: ideal = (128 MiB - n x burst) / (n x 20 MiB/s); connections the pacer saw (most at once, "
             "most opened in one run); of each connection's time from its first byte to its last, the share spent waiting for "
             "the server (between requests) and for the client (its socket full), medians; pace: each connection's bytes ÷ "
             "its first-to-last-byte time ÷ 20 MiB/s, the median of the connections that lived more than 50 ms; span: from "
             "the first byte of any connection to the last byte of any; ramp: from that first byte to the first byte of the "
             "n-th connection.",
             "",
             "| connections | tool | wall s | ideal s | of ideal | span s | ramp s | at once | opened | pace | waiting for the server | waiting for the client |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    share = lambda v: "—" if v is None else f"{v * 100:.1f}%"
    for r in rows:
        seconds = lambda v: "—" if v is None else f"{v:.3f}"
        lines.append(f"| {r['key'][1:]} | {r['tool']} | {r['wall']:.3f} | {r['ideal_wall']:.3f} | {r['ideal']:.3f} | "
                     f"{seconds(r.get('span'))} | {seconds(r.get('ramp'))} | "
                     f"{r.get('connections')} | {r.get('opened')} | {'—' if r.get('pace') is None else format(r['pace'], '.3f')} | "
                     f"{share(r.get('server_wait'))} | {share(r.get('client_wait'))} |")
    return "\n".join(lines)


def fmt_pacer_check(check):
    rate = check["rate"] / MiB
    lines = [f"Pacer check (medians of {check['rounds']}): n curl processes at once, each 8 requests of 2 MiB over one connection, "
             f"through the pacer at {rate:.0f} MiB/s per connection (burst {check['burst'] // 1024} KiB); expected n × {rate:.0f} MiB/s.",
             "",
             "| connections | in all (clients' wall) | expected | per connection (pacer: first to last byte) | slowest, fastest | "
             "waiting (between requests) | per connection, less the waiting | connections seen (at once) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in check["cases"]:
        n = c["connections"]
        lines.append(f"| {n} | {c['total'] * rate:.1f} MiB/s ({c['total'] / n:.3f} of n × R) | {n * rate:.0f} MiB/s | "
                     f"{c['per_connection']:.3f} of R | {c['slowest']:.3f}, {c['fastest']:.3f} | "
                     f"{'—' if 'waiting' not in c else format(c['waiting'] * 100, '.1f') + '%'} | "
                     f"{'—' if 'busy' not in c else format(c['busy'], '.3f') + ' of R'} | {c['opened']:.0f} ({c['max_open']:.0f}) |")
    lines += ["", f"The same 8 requests on one connection straight to nginx with `limit_rate {rate:.0f}m` (what (c) used before: "
              f"per request, a second's worth up front): {check['nginx_limit_rate']:.2f} of R."]
    return "\n".join(lines)


def measure_all(args):
    scenarios = set(args.scenarios.split(","))
    results = dict(version=1, date=time.strftime("%Y-%m-%d %H:%M"), commit=git_commit(),
                   machine=dict(cores=os.cpu_count(), mem_gib=os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2**30,
                                kernel=os.uname().release, load_at_start=os.getloadavg()[0]),
                   args=vars(args), rows=[], resume_rows=[], skipped={}, durations={})
    runner = Runner(args.rounds)
    results["rows"] = runner.rows
    started = time.monotonic()

    def lap(name, since):
        results["durations"][name] = round(time.monotonic() - since, 1)

    if "p" in scenarios:
        since = time.monotonic()
        if args.parser_benchmark and os.path.exists(args.parser_benchmark):
            print("running the parser benchmark...", file=sys.stderr)
            results["parser"] = parser_benchmark(args.parser_benchmark)
        else:
            results["skipped"]["p"] = "haul-parser-benchmark was not built (see run.sh's output)"
        lap("p", since)

    if not scenarios - {"p"}:
        results["durations"]["total"] = round(time.monotonic() - started, 1)
        return results
    work = tempfile.mkdtemp(prefix="haul-bench-")
    global GRAVEYARD
    GRAVEYARD = os.path.join(work, "retired")
    data, out = f"{work}/data", f"{work}/out"
    os.makedirs(data); os.makedirs(out)
    nginx = proxies = None
    pacer = None
    try:
        big, limited = args.size_mib * MiB, 128 * MiB
        sums = {}
        since = time.monotonic()
        if scenarios & set("abehx"):
            sums["big"] = make_file(f"{data}/big.bin", big, 1)
        if "c" in scenarios:
            sums["limited"] = make_file(f"{data}/limited.bin", limited, 2)
        small_size, small_names = 256 * 1024, [f"f{i:03d}.bin" for i in range(args.small_files)]
        if "d" in scenarios:
            os.makedirs(f"{data}/small")
            for i, name in enumerate(small_names):
                sums[name] = make_file(f"{data}/small/{name}", small_size, 1000 + i)
            assert len({sums[n] for n in small_names}) == len(small_names), "small files are not distinct"
        many_size, many_names = 4096, [f"m{i:05d}.bin" for i in range(args.many_files)]
        many_sums = {}
        if "f" in scenarios:
            os.makedirs(f"{data}/many")
            for i, name in enumerate(many_names):
                many_sums[name] = make_file(f"{data}/many/{name}", many_size, 100000 + i)
            assert len(set(many_sums.values())) == len(many_names), "4 KiB files are not distinct"
        lap("data", since)
        nginx = Nginx(work, data)
        haul = args.haul
        o = f"{out}/file"
        one = lambda digest: [(o, digest)]
        scenario = runner.scenario

        if "a" in scenarios:
            since = time.monotonic()
            url = nginx.url("/big.bin")
            scenario("a", f"(a) {args.size_mib} MiB HTTP", big, [
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
            lap("a", since)
        if "b" in scenarios:
            since = time.monotonic()
            url = nginx.url("/big.bin", tls=True)
            scenario("b", f"(b) {args.size_mib} MiB HTTPS", big, [
                ("haul -c1 --no-sync", [haul, "-q", "-c", "1", "--no-sync", "--cacert", nginx.ca, url, "-o", o], one(sums["big"])),
                ("haul -c8 --no-sync", [haul, "-q", "-c", "8", "--no-sync", "--cacert", nginx.ca, url, "-o", o], one(sums["big"])),
                ("curl -o FILE", ["curl", "-s", "--cacert", nginx.ca, "-o", o, url], one(sums["big"])),
                ("wget -O", ["wget", "-q", "--ca-certificate", nginx.ca, "-O", o, url], one(sums["big"])),
                ("aria2c -x8", ["aria2c", "-q", "-x8", "-s8", "-k1M", "--ca-certificate", nginx.ca, "--file-allocation=falloc", "-d", out, "-o", "file", url], one(sums["big"])),
            ])
            lap("b", since)
        if "c" in scenarios:
            since = time.monotonic()
            # Through the pacer (Benchmarks/pacer.c): each TCP connection at most 20 MiB/s across all its
            # requests. One scenario per connection count, so that Haul's ratio is to the peers using as
            # many; at 1, curl is the floor. Ideal: n connections x 20 MiB/s from the first byte, less the
            # burst each connection may take at once: (size - n x burst) / (n x rate) seconds.
            try:
                pacer = Pacer(work, nginx.http)
            except (RuntimeError, OSError) as error:
                results["skipped"]["c"] = str(error)
            if pacer:
                print("checking the pacer...", file=sys.stderr)
                try:
                    results["pacer_check"] = pacer_check(pacer, nginx, args.rounds)
                    print(fmt_pacer_check(results["pacer_check"]), file=sys.stderr)
                except (RuntimeError, OSError, ValueError) as error:
                    results["pacer_check"] = dict(error=str(error))
                    print(f"pacer check failed: {error}", file=sys.stderr)
                url = pacer.url("/limited.bin")
                rate = pacer.rate / MiB
                for n in (1, 8, 16):
                    seen = {}

                    def after(label):
                        # The pacer's counters for this run of the tool; a pacer that stopped answering
                        # leaves the row without them (the tool's own row still says how it fared).
                        try:
                            seen.setdefault(label, []).append(pacer.reset())
                        except (OSError, ValueError) as error:
                            print(f"(c): the pacer did not answer after {label}: {error}", file=sys.stderr)
                    tools = [(f"haul -c{n} --no-sync", [haul, "-q", "-c", str(n), "--no-sync", url, "-o", o], one(sums["limited"]))]
                    if n == 1:
                        tools.append(("curl -o FILE", ["curl", "-s", "-o", o, url], one(sums["limited"])))
                    else:
                        tools += [
                            (f"aria2c -x{n} -s{n} -k1M", ["aria2c", "-q", f"-x{n}", f"-s{n}", "-k1M", "--file-allocation=falloc", "-d", out, "-o", "file", url], one(sums["limited"])),
                            (f"axel -n {n}", ["axel", "-q", "-n", str(n), "-o", o, url], one(sums["limited"])),
                        ]
                    pacer.reset()
                    scenario(f"c{n}", f"(c) 128 MiB paced at {rate:.0f} MiB/s per connection, {plural(n, 'connection')}", limited, tools, after=after)
                    ideal = max(limited - n * pacer.burst, 0) / (n * pacer.rate)
                    for row in runner.rows:
                        if row["key"] == f"c{n}" and "failed" not in row:
                            stats = seen.get(row["tool"], [])
                            row["ideal"] = ideal / row["wall"]
                            row["ideal_wall"] = ideal
                            row["connections"] = max((st["max_open"] for st in stats), default=None)
                            row["opened"] = max((st["opened"] for st in stats), default=None)
                            # Of each connection's time from its first byte to its last, the share the pacer
                            # spent waiting for the server (between requests, mostly) and for the client.
                            lived = [sum(c[1] for c in st["closed"]) for st in stats]
                            for i, name in ((2, "server_wait"), (3, "client_wait")):
                                shares = [sum(c[i] for c in st["closed"]) / t for st, t in zip(stats, lived) if t > 0]
                                row[name] = statistics.median(shares) if shares else None
                            # What each connection got while it lived, as the pacer saw it: about 1 (of the rate)
                            # unless it waited for the server or the client, or the pacer fell behind.
                            paces = [c[0] / c[1] / pacer.rate for st in stats for c in st["closed"] if c[1] > 0.05]
                            row["pace"] = statistics.median(paces) if paces else None
                            # Where the rest of the wall time went, per run: span, the first byte of any
                            # connection to the last of any; ramp, that first byte to the first byte of the
                            # n-th connection (connections opening late).
                            spans, ramps = [], []
                            for st in stats:
                                firsts = sorted(c[4] for c in st["closed"])
                                if firsts:
                                    spans.append(max(c[5] for c in st["closed"]) - firsts[0])
                                    ramps.append(firsts[min(n, len(firsts)) - 1] - firsts[0])
                            row["span"] = statistics.median(spans) if spans else None
                            row["ramp"] = statistics.median(ramps) if ramps else None
                            row["extra"] = f" ({row['ideal'] * 100:.0f}% of {n}x{rate:.0f} MiB/s)"
                pacer.stop()
                pacer = None
            lap("c", since)
        if "d" in scenarios:
            since = time.monotonic()
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
                listing, curl_config = write_lists(work, f"small-{suffix}", urls, small_names, dest)
                ca = lambda flag: [flag, nginx.ca] if tls else []
                curl = ["curl", "-sS", "--parallel", "--parallel-max", "16", "-K", curl_config]
                scenario(f"d-{suffix}", f"(d) {len(small_names)} x 256 KiB {suffix.upper()}, 16 at a time", total, [
                    ("haul -i LIST -j 16", [haul, "-q", "-i", listing, "-j", "16", "-d", dest] + ca("--cacert"), outputs),
                    # Like for like: curl, aria2c and wget do not fdatasync what they write.
                    ("haul -i LIST -j 16 --no-sync", [haul, "-q", "--no-sync", "-i", listing, "-j", "16", "-d", dest] + ca("--cacert"), outputs),
                    ("curl --parallel --parallel-max 16", ["curl", "-sS", "--parallel", "--parallel-max", "16", "-K", curl_config] + ca("--cacert"), outputs),
                    ("aria2c -i LIST -j 16 -x1", ["aria2c", "-q", "-i", listing, "-j", "16", "-x1", "--file-allocation=falloc", "-d", dest] + ca("--ca-certificate"), outputs),
                    ("wget -i LIST (sequential)", ["wget", "-q", "-i", listing, "-P", dest] + ca("--ca-certificate"), outputs),
                ] + durable_peers(curl, listing, dest, outputs, ca("--cacert"), ca("--ca-certificate")),
                    scratch=dest, files=len(small_names), durable=DURABLE_PEERS)
            lap("d", since)
        if "e" in scenarios:
            since = time.monotonic()
            results["resume_rows"] = resume_scenario(args, nginx, haul, o, out, big, sums["big"])
            lap("e", since)
        if "f" in scenarios:
            since = time.monotonic()
            # Many small files: the same shape as (d), 4 KiB each, over HTTP. Every one of the outputs is
            # hashed (in this process, ~0.3 s for 10,000). Then Haul alone again on the first tenth of the
            # list (1,000 files by default): its peak RSS should not depend on the list's length.
            dest = f"{out}/many"
            few = 1000 if len(many_names) > 1000 else max(1, len(many_names) // 10)
            for key, names in (("f", many_names), ("f-few", many_names[:few])):
                urls = [nginx.url(f"/many/{name}") for name in names]
                listing, curl_config = write_lists(work, f"many-{len(names)}", urls, names, dest)
                outputs = [(f"{dest}/{name}", many_sums[name]) for name in names]
                curl = ["curl", "-sS", "--parallel", "--parallel-max", "16", "-K", curl_config]
                tools = [
                    ("haul -i LIST -j 16", [haul, "-q", "-i", listing, "-j", "16", "-d", dest], outputs),
                    ("haul -i LIST -j 16 --no-sync", [haul, "-q", "--no-sync", "-i", listing, "-j", "16", "-d", dest], outputs),
                    ("curl --parallel --parallel-max 16", curl, outputs),
                ]
                if key == "f" and args.api_benchmark and os.path.exists(args.api_benchmark):
                    # The Swift API at scale: the same list through HaulClient from a TaskGroup of 16
                    # (Benchmarks/APIBenchmark), each download awaited to its end.
                    tools += [
                        ("haul API, TaskGroup of 16", [args.api_benchmark, listing, dest, "--width", "16"], outputs),
                        ("haul API, TaskGroup of 16, --no-sync", [args.api_benchmark, listing, dest, "--width", "16", "--no-sync"], outputs),
                        # The same group with the client's loops as its task executor preference
                        # (`withTaskExecutorPreference(client.taskExecutor)`).
                        ("haul API, TaskGroup of 16 on the client's executor, --no-sync",
                         [args.api_benchmark, listing, dest, "--width", "16", "--no-sync", "--executor"], outputs),
                    ]
                if key == "f":
                    tools += [
                        ("aria2c -i LIST -j 16 -x1", ["aria2c", "-q", "-i", listing, "-j", "16", "-x1", "--file-allocation=falloc", "-d", dest], outputs),
                        ("wget -i LIST (sequential)", ["wget", "-q", "-i", listing, "-P", dest], outputs),
                    ] + durable_peers(curl, listing, dest, outputs)
                title = f"(f) {len(names)} x 4 KiB HTTP, 16 at a time" + (" (RSS against the list's length)" if key == "f-few" else "")
                scenario(key, title, many_size * len(names), tools, scratch=dest, files=len(names), durable=DURABLE_PEERS)
                if key == "f-few":
                    results["per_file"] = per_file_cost(tools[:3], outputs, dest, len(names), args.rounds)
            # The same list over HTTPS (nginx's TLS, verified against the run's CA), Haul in both modes next to
            # curl in the same rounds, with the TLS handshakes each run made, full and resumed (nginx's log of
            # each connection's first request): keep-alive reuse should keep them near 16 per run, not one per
            # file.
            urls = [nginx.url(f"/many/{name}", tls=True) for name in many_names]
            listing, curl_config = write_lists(work, "many-https", urls, many_names, dest)
            outputs = [(f"{dest}/{name}", many_sums[name]) for name in many_names]
            seen = {}

            def after(label):
                seen.setdefault(label, []).append(nginx.handshakes())
            nginx.handshakes()
            curl = ["curl", "-sS", "--parallel", "--parallel-max", "16", "-K", curl_config, "--cacert", nginx.ca]
            scenario("f-https", f"(f) {len(many_names)} x 4 KiB HTTPS, 16 at a time", many_size * len(many_names), [
                ("haul -i LIST -j 16", [haul, "-q", "-i", listing, "-j", "16", "-d", dest, "--cacert", nginx.ca], outputs),
                ("haul -i LIST -j 16 --no-sync", [haul, "-q", "--no-sync", "-i", listing, "-j", "16", "-d", dest, "--cacert", nginx.ca], outputs),
                ("curl --parallel --parallel-max 16", curl, outputs),
            ] + durable_peers(curl, listing, dest, outputs, wget2_ca=["--ca-certificate", nginx.ca]),
                scratch=dest, files=len(many_names), after=after, durable=DURABLE_PEERS)
            for row in runner.rows:
                if row["key"] == "f-https" and "failed" not in row and seen.get(row["tool"]):
                    full = statistics.median(f for f, _ in seen[row["tool"]])
                    resumed = statistics.median(r for _, r in seen[row["tool"]])
                    row["handshakes"] = dict(full=full, resumed=resumed)
                    row["extra"] = row.get("extra", "") + f", TLS handshakes {full:.0f} full + {resumed:.0f} resumed"
            lap("f", since)
        if "h" in scenarios:
            since = time.monotonic()
            # Peak RSS by connection count on the big file, --no-sync (what memory costs, not the disk).
            # aria2c allows at most 16 connections per server; curl and wget have one, shown at 1. haul
            # --version is Haul's start-up alone, to tell the cost of a download from that of the binary.
            url = nginx.url("/big.bin")
            tools = [(f"haul -c{n} --no-sync", [haul, "-q", "-c", str(n), "--no-sync", url, "-o", o], one(sums["big"])) for n in CONNECTION_COUNTS]
            tools += [(f"aria2c -x{n} -s{n} -k1M", ["aria2c", "-q", f"-x{n}", f"-s{n}", "-k1M", "--file-allocation=falloc", "-d", out, "-o", "file", url], one(sums["big"]))
                      for n in CONNECTION_COUNTS if n <= 16]
            tools += [(f"axel -n {n}", ["axel", "-q", "-n", str(n), "-o", o, url], one(sums["big"])) for n in CONNECTION_COUNTS]
            tools += [("curl -o FILE", ["curl", "-s", "-o", o, url], one(sums["big"])),
                      ("wget -O", ["wget", "-q", "-O", o, url], one(sums["big"])),
                      ("haul --version (start-up only)", [haul, "--version"], [])]
            scenario("h", f"(h) {args.size_mib} MiB HTTP by connection count", big, tools,
                     startup=["haul --version (start-up only)"], ratios=False)
            lap("h", since)
        if "x" in scenarios:
            since = time.monotonic()
            # The big file through an HTTP proxy (squid, no caching) and a SOCKS5 proxy (microsocks), Haul
            # with 8 connections against curl's one. Skipped when squid or microsocks is not installed.
            missing = [tool for tool in ("squid", "microsocks") if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}")]
            if missing:
                results["skipped"]["x"] = f"not installed: {', '.join(missing)}"
            else:
                try:
                    proxies = Proxies(work)
                except RuntimeError as error:
                    results["skipped"]["x"] = str(error)
            if proxies:
                url = nginx.url("/big.bin")
                for kind, proxy, server in (("squid", f"http://127.0.0.1:{proxies.http}", "squid (HTTP proxy)"),
                                            ("socks5", f"socks5://127.0.0.1:{proxies.socks}", "microsocks (SOCKS5)")):
                    scenario(f"x-{kind}", f"(x) {args.size_mib} MiB HTTP through {server}", big, [
                        (f"haul -c1 --no-sync -x {kind}", [haul, "-q", "-c", "1", "--no-sync", "-x", proxy, url, "-o", o], one(sums["big"])),
                        (f"haul -c8 --no-sync -x {kind}", [haul, "-q", "-c", "8", "--no-sync", "-x", proxy, url, "-o", o], one(sums["big"])),
                        (f"curl -x {kind} -o FILE", ["curl", "-s", "-x", proxy, "-o", o, url], one(sums["big"])),
                    ])
                proxies.stop()
            lap("x", since)
        if "m" in scenarios:
            since = time.monotonic()
            try:
                results["mirror_rows"] = mirror_scenario(args, runner, work, nginx, haul, o, out)
            except RuntimeError as error:
                results["skipped"]["m"] = str(error)
            lap("m", since)
        if "g" in scenarios:
            since = time.monotonic()
            huge = args.huge_gib * GiB
            # The source and one output at a time, plus room for the other scenarios' files.
            need = 2 * huge + GiB
            free = shutil.disk_usage(work).free
            if free < need:
                results["skipped"]["g"] = f"needs {need / GiB:.0f} GiB free in {work}, has {free / GiB:.0f}"
                print(f"(g) skipped: {results['skipped']['g']}", file=sys.stderr)
            else:
                print(f"(g) writing the {args.huge_gib} GiB source...", file=sys.stderr)
                t = time.monotonic()
                sums["huge"] = make_file(f"{data}/huge.bin", huge, 3)
                results["durations"]["g-source"] = round(time.monotonic() - t, 1)
                url = nginx.url("/huge.bin")
                scenario("g", f"(g) {args.huge_gib} GiB HTTP", huge, [
                    ("haul -c8 --no-sync", [haul, "-q", "-c", "8", "--no-sync", url, "-o", o], one(sums["huge"])),
                    ("haul -c8 (durable)", [haul, "-q", "-c", "8", url, "-o", o], one(sums["huge"])),
                    ("curl -o FILE", ["curl", "-s", "-o", o, url], one(sums["huge"])),
                ], rounds=args.huge_rounds)
                remove([f"{data}/huge.bin"])
            lap("g", since)
    finally:
        if proxies:
            proxies.stop()
        if pacer:
            pacer.stop()
        if nginx:
            nginx.stop()
        shutil.rmtree(work, ignore_errors=True)
    results["durations"]["total"] = round(time.monotonic() - started, 1)
    return results


MIRROR_RATES = (5, 20, 40)  # (m): MiB/s per connection of each mirror's pacer, in the order the URLs are given


def mirror_scenario(args, runner, work, nginx, haul, o, out):
    """(m): one file from three mirrors of different speeds (issue 25). Each mirror is a pacer in front of the
    same nginx (so every byte is the same file), at 5, 20 and 40 MiB/s per connection, on 127.0.0.1, .2 and .3
    (other hosts to a tool that keeps speeds per host, as aria2's adaptive selector does). The URLs are given
    slowest first, the same order for every tool. Haul with 8 connections next to aria2c with 8 (-x8 -s8) and
    its two selectors (adaptive, and its default, feedback). Each run's bytes per mirror are read from the
    pacers' counters. Ideal: every connection on the fastest mirror from the first byte, size / (8 x 40 MiB/s)."""
    size = args.mirror_mib * MiB
    path = f"{work}/data/mirrored.bin"
    digest = make_file(path, size, 4)
    pacers = []
    try:
        for index, rate in enumerate(MIRROR_RATES):
            pacers.append(Pacer(work, nginx.http, rate=rate * MiB, address=f"127.0.0.{index + 1}"))
    except (RuntimeError, OSError) as error:
        for pacer in pacers:
            pacer.stop()
        remove([path])
        raise RuntimeError(f"(m): {error}")
    urls = [pacer.url("/mirrored.bin") for pacer in pacers]
    n = 8
    aria = ["aria2c", "-q", f"-x{n}", f"-s{n}", "-k1M", "--file-allocation=falloc", "-d", out, "-o", "file"]
    tools = [(f"haul -c{n} --no-sync", [haul, "-q", "-c", str(n), "--no-sync"] + urls + ["-o", o], [(o, digest)])]
    if args.haul_before:
        # Another build of haul (--haul-before), e.g. one from before mirrors were chosen by speed.
        tools.append((f"haul -c{n} --no-sync (--haul-before)", [args.haul_before, "-q", "-c", str(n), "--no-sync"] + urls + ["-o", o], [(o, digest)]))
    tools += [
        (f"aria2c -x{n} -s{n} --uri-selector=adaptive", aria + ["--uri-selector=adaptive"] + urls, [(o, digest)]),
        (f"aria2c -x{n} -s{n} (feedback, its default)", aria + urls, [(o, digest)]),
    ]
    seen = {}

    def after(label):
        try:
            seen.setdefault(label, []).append([pacer.reset()["bytes"] for pacer in pacers])
        except (OSError, ValueError) as error:
            print(f"(m): a pacer did not answer after {label}: {error}", file=sys.stderr)
    rows = []
    try:
        for pacer in pacers:
            pacer.reset()
        rates = "/".join(str(r) for r in MIRROR_RATES)
        runner.scenario("m", f"(m) {args.mirror_mib} MiB from three mirrors paced at {rates} MiB/s per connection, {n} connections",
                        size, tools, after=after)
        ideal = size / (n * MIRROR_RATES[-1] * MiB)
        for row in runner.rows:
            if row["key"] == "m" and "failed" not in row:
                shares = seen.get(row["tool"], [])
                totals = [sum(run) or 1 for run in shares]
                row["mirror_shares"] = [statistics.median(run[i] / t for run, t in zip(shares, totals)) if shares else None
                                        for i in range(len(MIRROR_RATES))]
                row["fetched"] = statistics.median(totals) if shares else None
                row["ideal_wall"] = ideal
                rows.append(row)
    finally:
        for pacer in pacers:
            pacer.stop()
        remove([path])
    return rows


def fmt_mirrors(results):
    rows = results.get("mirror_rows") or []
    if not rows:
        return ""
    rates = ", ".join(f"{r} MiB/s" for r in MIRROR_RATES)
    lines = [f"(m) bytes each mirror served (the pacers' counters, median share of each run), mirrors given in the order {rates} "
             f"per connection; ideal: every connection on the fastest mirror from the first byte; fetched: bytes sent by the "
             f"three pacers in all, over the file's size.",
             "",
             "| tool | wall s | ideal s | " + " | ".join(f"from the {r} MiB/s mirror" for r in MIRROR_RATES) + " | fetched |",
             "|---|---:|---:|" + "---:|" * len(MIRROR_RATES) + "---:|"]
    for r in rows:
        shares = " | ".join("—" if v is None else f"{v * 100:.1f}%" for v in r["mirror_shares"])
        fetched = "—" if not r.get("fetched") else f"{r['fetched'] / r['bytes']:.3f}"
        lines.append(f"| {r['tool']} | {r['wall']:.3f} | {r['ideal_wall']:.3f} | {shares} | {fetched} |")
    return "\n".join(lines)


# Reading the results: tables, the issue's targets, charts. Everything below works from the results dict
# alone, so that --charts-only prints the same from a saved JSON file.

def fmt_rows(rows):
    lines = ["| scenario | tool | median wall s | MB/s | CPU s/GiB | peak RSS MiB | Haul vs best peer |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "failed" in r:
            lines.append(f"| {r['scenario']} | {r['tool']} | failed {r['failed']} of {r['rounds']} | | | | |")
        elif r.get("startup"):
            lines.append(f"| {r['scenario']} | {r['tool']} | {r['wall']:.3f} | | | {r['rss']:.1f} | |")
        else:
            lines.append(f"| {r['scenario']} | {r['tool']} | {r['wall']:.3f} | {r['rate']:.0f}{r.get('extra', '')} | "
                         f"{r['cpu']:.2f} | {r['rss']:.1f} | {r.get('ratio', '')}"
                         f"{'; ' + r['durable_ratio'] + ' vs best durable peer' if r.get('durable_ratio') else ''} |")
    return "\n".join(lines)


def find(results, key, tool):
    for row in results["rows"]:
        if row["key"] == key and row["tool"] == tool and "failed" not in row:
            return row
    return None


def rss_by_connections(results):
    """{tool family: {connections: peak RSS MiB}} from (h)."""
    table = {"haul --no-sync": {}, "aria2c -x N -s N": {}, "axel -n N": {}, "curl -o FILE": {}, "wget -O": {}}
    for n in CONNECTION_COUNTS:
        for family, tool in (("haul --no-sync", f"haul -c{n} --no-sync"), ("aria2c -x N -s N", f"aria2c -x{n} -s{n} -k1M"),
                             ("axel -n N", f"axel -n {n}")):
            row = find(results, "h", tool)
            if row:
                table[family][n] = row
    for family in ("curl -o FILE", "wget -O"):
        row = find(results, "h", family)
        if row:
            table[family][1] = row
    return table


def fmt_connections(results):
    table = rss_by_connections(results)
    if not any(table.values()):
        return ""
    families = list(table)
    lines = ["| connections | " + " | ".join(f"{f}: peak RSS MiB (MB/s)" for f in families) + " |",
             "|---:|" + "---:|" * len(families)]
    for n in CONNECTION_COUNTS:
        cells = [f"{table[f][n]['rss']:.1f} ({table[f][n]['rate']:.0f})" if n in table[f] else "" for f in families]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    haul = table["haul --no-sync"]
    start = find(results, "h", "haul --version (start-up only)")
    notes = []
    if start:
        notes.append(f"`haul --version` (start-up only): {start['rss']:.1f} MiB")
        if 1 in haul:
            notes.append(f"one download at -c1 adds {(haul[1]['rss'] - start['rss']) * 1024:.0f} KiB to that")
    counts = sorted(haul)
    if len(counts) >= 2:
        low, high = counts[0], counts[-1]
        notes.append(f"each connection from -c{low} to -c{high} adds "
                     f"{(haul[high]['rss'] - haul[low]['rss']) * 1024 / (high - low):.0f} KiB")
    return "\n".join(lines) + ("\n\n" + "; ".join(notes) + "." if notes else "")


def fmt_huge(results):
    args = results["args"]
    lines = [f"| tool | {args['size_mib']} MiB MB/s | {args['huge_gib']} GiB MB/s | {args['size_mib']} MiB peak RSS MiB | "
             f"{args['huge_gib']} GiB peak RSS MiB | {args['size_mib']} MiB CPU s/GiB | {args['huge_gib']} GiB CPU s/GiB |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    any_row = False
    for tool in ("haul -c8 --no-sync", "haul -c8 (durable)", "curl -o FILE"):
        huge = find(results, "g", tool)
        big = find(results, "a", tool) or find(results, "h", tool)
        if not huge and not big:
            continue
        any_row = True
        cell = lambda row, key, f: format(row[key], f) if row else "—"
        lines.append(f"| {tool} | {cell(big, 'rate', '.0f')} | {cell(huge, 'rate', '.0f')} | {cell(big, 'rss', '.1f')} | "
                     f"{cell(huge, 'rss', '.1f')} | {cell(big, 'cpu', '.2f')} | {cell(huge, 'cpu', '.2f')} |")
    return "\n".join(lines) if any_row and any(r["key"] == "g" for r in results["rows"]) else ""


def targets(results):
    """The issue 16 target table, computed: [(target, Haul, reference, measured, status)]."""
    args = results["args"]
    out = []
    big = f"{args['size_mib']} MiB"

    def judged(met, distance, *rows):
        """met / not met; not met, whatever the numbers, when Haul failed in any round behind them (a wrong
        SHA-256 included): medians of the rounds that passed do not make a target met."""
        failed = [r for r in results["rows"] for row in rows
                  if "failed" in r and r["key"] == row["key"] and r["tool"] == row["tool"] and r["tool"].startswith("haul")]
        if failed:
            return "not met: " + "; ".join(f"{r['tool']} failed {r['failed']} of {r['rounds']} rounds in {r['scenario']}" for r in failed)
        return status(met, distance)

    def missing(key):
        return "failed (see the rows above)" if key[0] in args["scenarios"].split(",") else "not run (--scenarios)"

    def ratio_target(target, key, tool, ref_key, ref_tool, at_least, label=None):
        haul, ref = find(results, key, tool), find(results, ref_key, ref_tool)
        if not haul or not ref:
            out.append((target, fmt_rate(haul), fmt_rate(ref), missing(key), "—"))
            return
        ratio = ref["wall"] / haul["wall"]
        out.append((target, fmt_rate(haul), f"{ref_tool}: {fmt_rate(ref)}", f"{ratio:.2f}×",
                    judged(ratio >= at_least, f"short by {(1 - ratio / at_least) * 100:.0f}%", haul)))

    ratio_target(f"{big}, 8 connections, durable ≥ 0.9× `dd bs=1M conv=fdatasync`", "a", "haul -c8 (durable)",
                 "a", "dd bs=1M conv=fdatasync (reference)", 0.9)
    ratio_target(f"{big}, 8 connections, `--no-sync` ≥ 2.5× curl -o FILE", "a", "haul -c8 --no-sync", "a", "curl -o FILE", 2.5)
    ratio_target(f"{big}, 8 connections, `--no-sync` ≥ 0.9× curl -o /dev/null", "a", "haul -c8 --no-sync",
                 "a", "curl -o /dev/null (reference)", 0.9)
    haul, axel = find(results, "c16", "haul -c16 --no-sync"), find(results, "c16", "axel -n 16")
    if haul and "ideal" in haul:
        out.append(("128 MiB, 16 connections paced at 20 MiB/s each ≥ 0.95 of ideal", f"{haul['ideal']:.3f} of ideal",
                    f"axel -n 16: {axel['ideal']:.3f}" if axel and "ideal" in axel else "axel: —",
                    f"{haul['ideal']:.3f}", judged(haul["ideal"] >= 0.95, f"{0.95 - haul['ideal']:.3f} short", haul)))
    else:
        out.append(("128 MiB, 16 connections paced at 20 MiB/s each ≥ 0.95 of ideal", "—", "—", missing("c"), "—"))
    for suffix in ("http", "https"):
        ratio_target(f"{args['small_files']} × 256 KiB {suffix.upper()}, 16 at a time, durable ≥ 1.2× curl --parallel",
                     f"d-{suffix}", "haul -i LIST -j 16", f"d-{suffix}", "curl --parallel --parallel-max 16", 1.2)
        ratio_target(f"… durable ≥ 1.2× curl --parallel then `sync -f` (files durable in both)",
                     f"d-{suffix}", "haul -i LIST -j 16", f"d-{suffix}", CURL_THEN_SYNC, 1.2)
    for mode, tool in (("durable", "haul -i LIST -j 16"), ("`--no-sync`", "haul -i LIST -j 16 --no-sync")):
        ratio_target(f"{args['many_files']:,} × 4 KiB, 16 at a time, {mode} ≥ 1.2× curl --parallel",
                     "f", tool, "f", "curl --parallel --parallel-max 16", 1.2)
    ratio_target(f"… durable ≥ 1.2× curl --parallel then `sync -f` (files durable in both)",
                 "f", "haul -i LIST -j 16", "f", CURL_THEN_SYNC, 1.2)
    for mode, tool in (("durable", "haul -i LIST -j 16"), ("`--no-sync`", "haul -i LIST -j 16 --no-sync")):
        ratio_target(f"{args['many_files']:,} × 4 KiB HTTPS, 16 at a time, {mode} ≥ 1.2× curl --parallel",
                     "f-https", tool, "f-https", "curl --parallel --parallel-max 16", 1.2)
    ratio_target(f"… durable ≥ 1.2× curl --parallel then `sync -f` (files durable in both)",
                 "f-https", "haul -i LIST -j 16", "f-https", CURL_THEN_SYNC, 1.2)
    for mode, tool in (("durable", "haul -i LIST -j 16"), ("`--no-sync`", "haul -i LIST -j 16 --no-sync")):
        many, few = find(results, "f", tool), find(results, "f-few", tool)
        target = f"{mode}: peak RSS flat in the list's length (≤ 0.5 MiB more at 10× the files)"
        if many and few:
            growth = many["rss"] - few["rss"]
            out.append((target, f"{many['rss']:.1f} MiB at {many['files']:,} files", f"{few['rss']:.1f} MiB at {few['files']:,} files",
                        f"{growth:+.2f} MiB", judged(growth <= 0.5, f"{growth - 0.5:.2f} MiB over", many, few)))
        else:
            out.append((target, "—", "—", missing("f"), "—"))
    cost = results.get("per_file") or {}
    curl_cost = cost.get("curl --parallel --parallel-max 16", {})
    for tool in ("haul -i LIST -j 16 --no-sync", "haul -i LIST -j 16"):
        haul_cost = cost.get(tool, {})
        target = f"{tool}: syscalls per small file ≤ curl's + 2"
        if "per_file" in haul_cost and "per_file" in curl_cost:
            budget = curl_cost["per_file"] + 2
            out.append((target, f"{haul_cost['per_file']:.1f}", f"curl {curl_cost['per_file']:.1f}", f"{haul_cost['per_file']:.1f} (budget {budget:.1f})",
                        status(haul_cost["per_file"] <= budget, f"{haul_cost['per_file'] - budget:.1f} over")))
        else:
            out.append((target, "—", "—", cost.get("error") or missing("f"), "—"))
        target = f"{tool}: CPU (user + system) per small file ≤ curl's"
        if "cpu_ms_per_file" in haul_cost and "cpu_ms_per_file" in curl_cost:
            ratio = haul_cost["cpu_ms_per_file"] / curl_cost["cpu_ms_per_file"]
            out.append((target, f"{haul_cost['cpu_ms_per_file']:.3f} ms", f"curl {curl_cost['cpu_ms_per_file']:.3f} ms", f"{ratio:.2f}× curl's",
                        status(ratio <= 1, f"{(ratio - 1) * 100:.0f}% over")))
        else:
            out.append((target, "—", "—", cost.get("error") or missing("f"), "—"))
    api, cli = find(results, "f", "haul API, TaskGroup of 16, --no-sync"), find(results, "f", "haul -i LIST -j 16 --no-sync")
    target = f"{args['many_files']:,} downloads through HaulClient from a TaskGroup of 16 as fast as `-i` (`--no-sync`)"
    if api and cli:
        extra_us = (api["wall"] - cli["wall"]) / api["files"] * 1e6
        out.append((target, fmt_rate(api), f"-i: {fmt_rate(cli)}", f"{cli['wall'] / api['wall']:.2f}× ({extra_us:+.0f} µs per download)",
                    status(api["wall"] <= cli["wall"] * 1.05, f"{(api['wall'] / cli['wall'] - 1) * 100:.0f}% slower")))
    else:
        out.append((target, "—", "—", "not run (needs --api-benchmark and (f))", "—"))
    api = find(results, "f", "haul API, TaskGroup of 16 on the client's executor, --no-sync")
    target = f"… the same with `withTaskExecutorPreference(client.taskExecutor)`"
    if api and cli:
        extra_us = (api["wall"] - cli["wall"]) / api["files"] * 1e6
        out.append((target, fmt_rate(api), f"-i: {fmt_rate(cli)}", f"{cli['wall'] / api['wall']:.2f}× ({extra_us:+.0f} µs per download)",
                    status(api["wall"] <= cli["wall"] * 1.05, f"{(api['wall'] / cli['wall'] - 1) * 100:.0f}% slower")))
    else:
        out.append((target, "—", "—", "not run (needs --api-benchmark and (f))", "—"))
    c16 = find(results, "a", "haul -c16 --no-sync") or find(results, "h", "haul -c16 --no-sync")
    curl = find(results, "a", "curl -o FILE") or find(results, "h", "curl -o FILE")
    wget = find(results, "a", "wget -O") or find(results, "h", "wget -O")
    refs = ", ".join(f"{name} {row['rss']:.1f}" for name, row in (("curl", curl), ("wget", wget)) if row) or "—"
    if c16:
        out.append((f"peak RSS, {big} at 16 connections, static CLI ≤ 8 MiB", f"{c16['rss']:.1f} MiB", refs,
                    f"{c16['rss']:.1f} MiB", judged(c16["rss"] <= 8, f"{c16['rss'] - 8:.1f} MiB over", c16)))
    else:
        out.append((f"peak RSS, {big} at 16 connections, static CLI ≤ 8 MiB", "—", refs, missing("a") if "a" in args["scenarios"].split(",") else missing("h"), "—"))
    haul_conn = rss_by_connections(results)["haul --no-sync"]
    if len(haul_conn) >= 2:
        low, high = min(haul_conn), max(haul_conn)
        per = (haul_conn[high]["rss"] - haul_conn[low]["rss"]) * 1024 / (high - low)
        start = find(results, "h", "haul --version (start-up only)")
        per_download = f"; one download adds {(haul_conn[low]['rss'] - start['rss']) * 1024:.0f} KiB to start-up ({start['rss']:.1f} MiB)" if start and low == 1 else ""
        out.append(("the library's cost per connection and per download, stated and flat",
                    f"{per:.0f} KiB per connection (-c{low} → -c{high}){per_download}", "(h)", f"{per:.0f} KiB/connection", "stated"))
    for tool in ("haul -c8 --no-sync", "haul -c8 (durable)"):
        huge = find(results, "g", tool)
        base = find(results, "a", tool) or find(results, "h", tool)
        target = f"{args['huge_gib']} GiB, {tool}: peak RSS flat against {big} (≤ 0.5 MiB more)"
        if huge and base:
            growth = huge["rss"] - base["rss"]
            out.append((target, f"{huge['rss']:.1f} MiB, {huge['rate']:.0f} MB/s", f"{big}: {base['rss']:.1f} MiB, {base['rate']:.0f} MB/s",
                        f"{growth:+.2f} MiB", judged(growth <= 0.5, f"{growth - 0.5:.2f} MiB over", huge, base)))
        else:
            reason = results.get("skipped", {}).get("g") or missing("g")
            if huge and not base:
                reason = f"no {big} row to compare with ((a) and (h) not run or failed)"
            out.append((target, "—", "—", reason, "—"))
    parser = results.get("parser")
    target = "response head, 333 B, 11 fields ≤ 150 ns"
    if parser and parser.get("haul_ns") is not None:
        pico = (f"picohttpparser {parser['pico_ns']:.0f} ns" + (" (fastest build)" if len(parser.get("pico_builds", {})) > 1 else "")
                if parser.get("pico_ns") is not None else "picohttpparser: not printed by the benchmark")
        ratio = f" ({parser['haul_ns'] / parser['pico_ns']:.2f}× pico)" if parser.get("pico_ns") else ""
        kind = f" ({parser['kind']} time)" if parser.get("kind") in ("cpu", "wall") else ""
        out.append((target, f"{parser['haul_ns']:.0f} ns/head{kind}", pico, f"{parser['haul_ns']:.0f} ns{ratio}",
                    status(parser["haul_ns"] <= 150, f"{parser['haul_ns'] - 150:.0f} ns over")))
    else:
        run = "p" in results["args"]["scenarios"].split(",")
        why = (parser or {}).get("error") or results.get("skipped", {}).get("p") or (
            "output not understood (raw lines above)" if run else "not run (--scenarios)")
        out.append((target, "—", "—", why, "—"))
    return out


def fmt_rate(row):
    if not row:
        return "—"
    if row.get("files"):
        return f"{row['files'] / row['wall']:,.0f} files/s ({row['wall']:.3f} s)"
    return f"{row['rate']:,.0f} MB/s"


def status(met, distance):
    return "met" if met else f"not met ({distance})"


def report(results):
    """The markdown the run prints (and saves next to its JSON)."""
    args, m = results["args"], results["machine"]
    parts = [f"Machine: {m['cores']} cores, {m['mem_gib']} GiB, Linux {m['kernel']}, load {m['load_at_start']:.1f} at the start; "
             f"haul at {results.get('commit') or '?'}; {plural(args['rounds'], 'round')}" + (f" ({args['huge_rounds']} for (g))" if args['huge_rounds'] != args['rounds'] else "") + ", medians; "
             f"peak RSS is the largest seen. {results['date']}."]
    if results["rows"]:
        parts.append(fmt_rows(results["rows"]))
    if results.get("pacer_check", {}).get("cases"):
        parts.append(fmt_pacer_check(results["pacer_check"]))
    elif results.get("pacer_check", {}).get("error"):
        parts.append(f"Pacer check failed: {results['pacer_check']['error']}")
    if results.get("skipped", {}).get("c"):
        parts.append(f"(c) skipped: {results['skipped']['c']}")
    paced = fmt_paced(results)
    if paced:
        parts.append(paced)
    mirrored = fmt_mirrors(results)
    if mirrored:
        parts.append(mirrored)
    if results.get("resume_rows"):
        parts.append(f"(e) {args['size_mib']} MiB over HTTP, first run throttled to {args['size_mib'] // 8} MiB/s in all and "
                     f"interrupted with SIG{args['resume_signal']} once nginx has sent 50%; second run unthrottled, timed to the end. "
                     "MiB columns are nginx's $bytes_sent (access log), medians.")
        lines = ["| tool (resume command) | sent before the kill MiB | resume: wall s | resume: MiB fetched | fetched twice MiB | CPU s | peak RSS MiB |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        for r in results["resume_rows"]:
            if "failed" in r:
                lines.append(f"| {r['tool']} | failed {r['failed']} of {r['rounds']} | | | | | |")
            else:
                lines.append(f"| {r['tool']} | {r['first'] / MiB:.0f} | {r['wall']:.3f} | {r['second'] / MiB:.0f} | "
                             f"{r['twice'] / MiB:.0f} | {r['cpu']:.2f} | {r['rss']:.1f} |")
        parts.append("\n".join(lines))
    per_file = fmt_per_file(results)
    if per_file:
        parts.append(per_file)
    connections = fmt_connections(results)
    if connections:
        parts.append(f"### (h) Peak RSS by connection count, {args['size_mib']} MiB HTTP\n\n{connections}")
    huge = fmt_huge(results)
    if huge:
        parts.append(f"### (g) {args['huge_gib']} GiB against {args['size_mib']} MiB\n\n{huge}")
    parser = results.get("parser")
    if parser:
        raw = "\n".join(f"    {line}" for line in parser["lines"]) or "    (no output)"
        parts.append(f"### (p) Parser benchmark output\n\n{raw}" + (f"\n\n(error: {parser['error']})" if parser.get("error") else ""))
    lines = ["### Issue 16 targets", "", "| target | Haul | reference | measured | status |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {' | '.join(t)} |" for t in targets(results)]
    parts.append("\n".join(lines))
    if results.get("skipped"):
        parts.append("Skipped: " + "; ".join(f"({k}) {v}" for k, v in results["skipped"].items()))
    if results.get("durations"):
        parts.append("Durations (s): " + ", ".join(f"{k} {v:.0f}" for k, v in results["durations"].items()))
    return "\n\n".join(parts) + "\n"


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



# Charts (gnuplot, SVG). One horizontal bar panel per scenario, each with its own scale and unit, Haul's bars
# in blue, peers grey, references (dd, curl -o /dev/null) light grey; failed tools are named, without a bar.

HAUL, PEER, REFERENCE = 0x1F5FBF, 0x8C8C8C, 0xCCCCCC


def gp_string(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', "'") + '"'


def chart_rows(results, key):
    """The rows of one scenario for a chart: one per tool, the measured row if there is one."""
    chosen = {}
    for row in results["rows"]:
        if row["key"] != key:
            continue
        if row["tool"] not in chosen or "failed" in chosen[row["tool"]]:
            chosen[row["tool"]] = row
    return list(chosen.values())


def two_lines(title, second):
    """A gnuplot string of two lines (the escape is only read inside double quotes)."""
    return gp_string(title)[:-1] + "\\n" + gp_string(second)[1:]


def subtitle(results):
    m, args = results["machine"], results["args"]
    return (f"{results['date']}, haul {results.get('commit') or '?'}, {m['cores']} cores, nginx on loopback; "
            f"medians of {plural(args['rounds'], 'round')}" + (f" ({args['huge_rounds']} for (g))" if args['huge_rounds'] != args['rounds'] else ""))


def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def bar_chart(path, title, panels):
    """panels: [(title, unit, [(label, value or None, color, text)])]. Writes a gnuplot script and runs it."""
    row_px, head_px, foot_px, top_px, width = 19, 34, 64, 56, 980
    heights = [len(items) * row_px + head_px + foot_px for _, _, items in panels]
    total = sum(heights) + top_px
    lines = [f'set terminal svg size {width},{total} dynamic noenhanced font "sans,11" background rgb "white"',
             f"set output {gp_string(path)}", "unset key", "set style fill solid 0.9 border lc rgb '#444444'",
             "set grid xtics lc rgb '#e0e0e0'", "set lmargin at screen 0.34", "set rmargin at screen 0.86",
             "set xtics nomirror", "set ytics nomirror scale 0", "set border 3"]
    for i, (_, _, items) in enumerate(panels):
        lines.append(f"$d{i} << EOD")
        for label, value, color, text in items:
            lines.append(f"{value or 0:.6g} {color} {gp_string(text)}")
        lines.append("EOD")
    lines.append(f"set multiplot title {title}")
    y = 1 - top_px / total
    for i, (panel_title, unit, items) in enumerate(panels):
        h = heights[i] / total
        biggest = max([v for _, v, _, _ in items if v] or [1])
        tics = ", ".join(f"{gp_string(label)} {j}" for j, (label, _, _, _) in enumerate(items))
        lines += [f"set tmargin at screen {y - 30 / total:.5f}", f"set bmargin at screen {y - h + 60 / total:.5f}",
                  f"set title {gp_string(panel_title)}", f"set xlabel {gp_string(unit)} offset 0,0.5",
                  f"set yrange [{len(items) - 0.5}:-0.5]", f"set ytics ({tics})", f"set xrange [0:{biggest * 1.22:.6g}]",
                  f"plot $d{i} using (0):0:(0):1:($0-0.36):($0+0.36):2 with boxxyerror lc rgb variable, "
                  f"$d{i} using 1:0:3 with labels left offset char 0.4,0 font 'sans,10'"]
        y -= h
    lines.append("unset multiplot")
    return lines


def draw_charts(results, directory):
    if not shutil.which("gnuplot"):
        print("gnuplot is not installed: no charts (run.sh installs gnuplot-nox)", file=sys.stderr)
        return []
    os.makedirs(directory, exist_ok=True)
    keys = []
    for row in results["rows"]:
        if row["key"] not in keys and row["key"] != "h":
            keys.append(row["key"])
    titles = {row["key"]: row["scenario"] for row in results["rows"]}

    def color(row):
        return REFERENCE if row.get("reference") else HAUL if row["tool"].startswith("haul") else PEER

    throughput, cpu = [], []
    for key in keys:
        rows = chart_rows(results, key)
        files = any(r.get("files") for r in rows)
        items_rate, items_cpu = [], []
        for r in rows:
            if "failed" in r:
                text = f"failed {r['failed']} of {r['rounds']}"
                items_rate.append((r["tool"], None, color(r), text))
                items_cpu.append((r["tool"], None, color(r), text))
                continue
            value = r["files"] / r["wall"] if files else r["rate"]
            items_rate.append((r["tool"], value, color(r), f"{value:,.0f}"))
            items_cpu.append((r["tool"], r["cpu"], color(r), f"{r['cpu']:.2f}"))
        throughput.append((titles[key], "files/s (more is better)" if files else "MB/s (more is better)", items_rate))
        cpu.append((titles[key], "CPU s (user + system) per GiB written (less is better)", items_cpu))
    scripts = {}
    if throughput:
        scripts["throughput.svg"] = bar_chart(f"{directory}/throughput.svg", two_lines("Throughput by tool and scenario", subtitle(results)), throughput)
        scripts["cpu.svg"] = bar_chart(f"{directory}/cpu.svg", two_lines("CPU per GiB by tool and scenario", subtitle(results)), cpu)
    table = rss_by_connections(results)
    if any(table.values()):
        styles = {"haul --no-sync": f"lw 2.5 pt 7 ps 0.8 lc rgb '#{HAUL:06x}'", "aria2c -x N -s N": "lw 1.5 pt 5 ps 0.8 lc rgb '#d08020'",
                  "axel -n N": "lw 1.5 pt 9 ps 0.9 lc rgb '#40a040'", "curl -o FILE": "pt 13 ps 1.4 lc rgb '#a03030'",
                  "wget -O": "pt 11 ps 1.4 lc rgb '#7040a0'"}
        path = f"{directory}/rss-connections.svg"
        lines = ['set terminal svg size 980,480 dynamic noenhanced font "sans,11" background rgb "white"',
                 f"set output {gp_string(path)}", "set logscale x 2", "set xtics (1, 2, 4, 8, 16, 32) nomirror",
                 "set xrange [0.8:40]", "set grid lc rgb '#e0e0e0'", "set key below", "set border 3", "set ytics nomirror",
                 "set xlabel 'connections'"]
        blocks = []
        for i, (family, points) in enumerate(table.items()):
            if not points:
                continue
            lines.append(f"$c{i} << EOD")
            lines += [f"{n} {points[n]['rss']:.3f} {points[n]['rate']:.3f}" for n in sorted(points)]
            lines.append("EOD")
            kind = "linespoints" if len(points) > 1 else "points"
            blocks.append((i, family, kind))
        heading = two_lines(f"{results['args']['size_mib']} MiB over HTTP by connection count", subtitle(results))
        lines.append(f"set multiplot layout 1,2 title {heading}")
        lines += ["set title 'peak RSS (less is better; dashed: the 8 MiB target for haul at 16)'", "set ylabel 'MiB'", "set yrange [0:*]",
                  "set arrow 1 from 0.8,8 to 40,8 nohead dt 2 lc rgb '#1f5fbf'",
                  "plot " + ", ".join(f"$c{i} using 1:2 with {kind} {styles[f]} title {gp_string(f)}" for i, f, kind in blocks),
                  "unset arrow 1", "set title 'throughput (more is better; haul --no-sync)'", "set ylabel 'MB/s'",
                  "plot " + ", ".join(f"$c{i} using 1:3 with {kind} {styles[f]} title {gp_string(f)}" for i, f, kind in blocks),
                  "unset multiplot"]
        scripts["rss-connections.svg"] = lines
    written = []
    for name, lines in scripts.items():
        result = subprocess.run(["gnuplot"], input="\n".join(lines) + "\n", text=True, capture_output=True)
        if result.returncode != 0:
            print(f"gnuplot failed for {name}: {result.stderr[-800:]}", file=sys.stderr)
        else:
            written.append(f"{directory}/{name}")
    return written


def save(results, text, directory):
    os.makedirs(directory, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = f"{directory}/run-{stamp}.json"
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    shutil.copyfile(path, f"{directory}/latest.json")
    with open(f"{directory}/latest.md", "w") as f:
        f.write(text)
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--haul", help="the haul binary (run.sh builds it)")
    parser.add_argument("--parser-benchmark", help="the haul-parser-benchmark binary for (p) (run.sh builds it)")
    parser.add_argument("--api-benchmark", help="the haul-api-benchmark binary for (f)'s Swift API rows (run.sh builds it)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenarios", default=ALL_SCENARIOS, help=f"comma-separated, from {ALL_SCENARIOS}")
    parser.add_argument("--size-mib", type=int, default=1024, help="size of the big file of (a), (b), (e) and (h)")
    parser.add_argument("--small-files", type=int, default=200, help="number of 256 KiB files in (d)")
    parser.add_argument("--many-files", type=int, default=10000, help="number of 4 KiB files in (f)")
    parser.add_argument("--huge-gib", type=int, default=16, help="size of the one file of (g)")
    parser.add_argument("--mirror-mib", type=int, default=1024, help="size of the file of (m), fetched from three mirrors")
    parser.add_argument("--haul-before", help="(m) also runs this haul binary (an earlier build, for an A/B in the same run)")
    parser.add_argument("--huge-rounds", type=int, help="rounds of (g) (default: --rounds)")
    parser.add_argument("--resume-signal", default="KILL", choices=["KILL", "INT", "TERM"],
                        help="how (e) interrupts the first half")
    parser.add_argument("--results-dir", default=f"{REPO}/Benchmarks/results", help="where the JSON of each run goes")
    parser.add_argument("--charts-dir", default=f"{REPO}/docs/benchmarks", help="where the SVG charts go")
    parser.add_argument("--no-charts", action="store_true", help="measure and save, but do not redraw the charts")
    parser.add_argument("--charts-only", metavar="RESULTS_JSON", help="print the tables and draw the charts of a saved run; measure nothing")
    args = parser.parse_args()

    if args.charts_only:
        with open(args.charts_only) as f:
            results = json.load(f)
        print(report(results))
        for path in draw_charts(results, args.charts_dir):
            print(f"chart: {os.path.relpath(path, REPO)}", file=sys.stderr)
        return
    if not args.haul:
        parser.error("--haul is required (or --charts-only)")
    unknown = set(args.scenarios.split(",")) - set(ALL_SCENARIOS.split(","))
    if unknown:
        parser.error(f"unknown scenarios: {','.join(sorted(unknown))} (choose from {ALL_SCENARIOS})")
    if args.huge_rounds is None:
        args.huge_rounds = args.rounds
    # Every tool connects to the local nginx directly (only (x) names a proxy, on its command line): a proxy
    # from the environment would put one between them in every scenario.
    for name in ("http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        os.environ.pop(name, None)

    # SIGTERM and SIGHUP end the run like Ctrl-C: the running tool's process group is killed, nginx stopped,
    # the temporary directory (with the 16 GiB file and its copy) removed.
    def interrupted(signum, _):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)

    try:
        results = measure_all(args)
    except KeyboardInterrupt:
        print("\ninterrupted: the running tool was stopped and the temporary directory removed", file=sys.stderr)
        sys.exit(130)
    text = report(results)
    print("\n" + text)
    path = save(results, text, args.results_dir)
    print(f"results: {os.path.relpath(path, REPO)}", file=sys.stderr)
    if not args.no_charts:
        for chart in draw_charts(results, args.charts_dir):
            print(f"chart: {os.path.relpath(chart, REPO)}", file=sys.stderr)


if __name__ == "__main__":
    main()
