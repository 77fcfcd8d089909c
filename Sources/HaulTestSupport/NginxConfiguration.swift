import Glibc

/// What an ``NginxServer`` serves and how; the defaults suit most integration tests.
public struct NginxConfiguration: Sendable {
    /// A location that serves the data directory with a per-connection bandwidth cap (`limit_rate`).
    public struct RateLimitedLocation: Sendable {
        /// The URI prefix, with leading and trailing slash, e.g. `/limited/`.
        public var prefix: String
        /// The nginx rate, bytes per second with optional `k`/`m` suffix, e.g. `20m`.
        public var rate: String

        /// Creates a rate-limited alias of the data directory at `prefix`.
        public init(prefix: String = "/limited/", rate: String = "20m") {
            self.prefix = prefix
            self.rate = rate
        }
    }

    /// An exact-path redirect, rendered as `location = from { return status to; }`.
    public struct Redirect: Sendable {
        /// The exact request path that redirects, e.g. `/redirect-a`.
        public var from: String
        /// The `Location` target: a path (made absolute by nginx unless ``absoluteRedirects`` is off) or a URL.
        public var to: String
        /// 301, 302, 303, 307 or 308.
        public var status: Int

        /// Creates a redirect from one exact path to a target.
        public init(from: String, to: String, status: Int = 302) {
            self.from = from
            self.to = to
            self.status = status
        }
    }

    /// The directory served at `/`; `nil` means the server's own, initially empty ``NginxServer/dataDirectory``.
    public var dataDirectory: String?
    /// Whether to listen for HTTPS as well (``NginxServer/httpsPort``).
    public var enableTLS: Bool = true
    /// Whether to listen on `[::1]` too; by default only where the machine has IPv6 loopback.
    public var enableIPv6: Bool = LoopbackPorts.isIPv6Available
    /// Whether to listen on `127.0.0.1`; off (with ``enableIPv6`` on) for a server reachable over IPv6 only.
    public var enableIPv4: Bool = true
    /// A PEM file of CAs whose client certificates HTTPS requires (`ssl_verify_client on`); nil asks for none.
    /// A request without one is answered `400`.
    public var clientCertificateAuthority: String?
    /// nginx worker processes; each is a separate process with its own connections.
    public var workerProcesses: Int = 1
    /// The certificate for HTTPS; `nil` means the shared test CA's server certificate.
    public var certificate: TestCertificateAuthority.CertificateFiles?
    /// An optional bandwidth-capped alias of the data directory; on by default at `/limited/` with 20 MB/s.
    public var rateLimitedLocation: RateLimitedLocation? = RateLimitedLocation()
    /// Exact-path redirects, e.g. a chain or a loop.
    public var redirects: [Redirect] = []
    /// Whether nginx turns redirect paths into absolute URLs (`absolute_redirect`).
    public var absoluteRedirects: Bool = true
    /// `keepalive_requests`: how many requests one connection may carry before nginx closes it.
    public var keepaliveRequests: Int = 10_000
    /// Raw directives appended inside the `server` block, for anything not modelled here (extra locations).
    public var extraServerDirectives: String = ""

    /// The default configuration: HTTP and HTTPS, `/limited/` at 20 MB/s, no redirects.
    public init() {}
}

extension NginxConfiguration {
    /// The complete `nginx.conf` text for a server rooted at `directory`.
    func render(
        directory: String, dataDirectory: String, httpPort: UInt16, httpsPort: UInt16?, certificate: TestCertificateAuthority.CertificateFiles?
    ) -> String {
        var listens = enableIPv4 ? ["listen 127.0.0.1:\(httpPort);"] : []
        if enableIPv6 { listens.append("listen [::1]:\(httpPort);") }
        if let httpsPort {
            if enableIPv4 { listens.append("listen 127.0.0.1:\(httpsPort) ssl;") }
            if enableIPv6 { listens.append("listen [::1]:\(httpsPort) ssl;") }
        }
        var tls: [String] = []
        if let certificate {
            tls = [
                "ssl_certificate \(certificate.certificatePath);",
                "ssl_certificate_key \(certificate.keyPath);",
                "ssl_protocols TLSv1.2 TLSv1.3;",
                "ssl_session_cache shared:haul_tls:1m;",
            ]
            if let clientCertificateAuthority {
                tls += ["ssl_client_certificate \(clientCertificateAuthority);", "ssl_verify_client on;"]
            }
        }
        var locations = ["location / { }"]
        if let limited = rateLimitedLocation {
            locations.append("location \(limited.prefix) { alias \(dataDirectory)/; limit_rate \(limited.rate); }")
        }
        for redirect in redirects {
            locations.append("location = \(redirect.from) { return \(redirect.status) \(redirect.to); }")
        }
        // Workers of a root master run as nobody unless told otherwise and could not read our 0700 temp dirs.
        let user = geteuidIsRoot ? "user root;" : ""
        // Tabs separate the fields, and escape=json keeps tabs, quotes and newlines inside values from
        // breaking the split; empty values are logged as empty strings rather than "-".
        let logFormat = [
            "$connection", "$connection_requests", "$status", "$bytes_sent", "$body_bytes_sent", "$request",
            "$http_range", "$http_if_range", "$server_port", "$scheme",
        ].joined(separator: "\\t")
        return """
            \(user)
            daemon off;
            master_process on;
            worker_processes \(workerProcesses);
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log info;

            events {
                worker_connections 1024;
            }

            http {
                default_type application/octet-stream;
                log_format haul escape=json '\(logFormat)';
                access_log \(directory)/access.log haul;
                client_body_temp_path \(directory)/temp/client_body;
                proxy_temp_path \(directory)/temp/proxy;
                fastcgi_temp_path \(directory)/temp/fastcgi;
                uwsgi_temp_path \(directory)/temp/uwsgi;
                scgi_temp_path \(directory)/temp/scgi;
                sendfile on;
                tcp_nopush on;
                keepalive_requests \(keepaliveRequests);
                keepalive_timeout 65s;
                server_tokens off;
                absolute_redirect \(absoluteRedirects ? "on" : "off");

                server {
                    \(listens.joined(separator: "\n        "))
                    server_name localhost;
                    root \(dataDirectory);
                    \(tls.joined(separator: "\n        "))
                    \(locations.joined(separator: "\n        "))
                    \(extraServerDirectives)
                }
            }

            """
    }
}

private var geteuidIsRoot: Bool { geteuid() == 0 }
