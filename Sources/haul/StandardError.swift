import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The terminal's width, for the progress bar.
enum Terminal {
    static func columns() -> Int {
        var size = winsize()
        if ioctl(2, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }
}

/// Unbuffered writes to stderr (progress and errors must appear at once, in order).
///
/// SIGPIPE is ignored (``HaulEntry``), so a reader that went away (`haul URL 2>&1 | head -1`) shows as EPIPE:
/// nothing more is written to stderr then, and the downloads go on to their usual end and exit status, as
/// curl's do. Losing the messages is the reader's choice; losing the download would not be.
enum StandardError {
    /// Set by the first write that found stderr's reader gone.
    private static let readerGone = Atomic<Bool>(false)

    static func write(_ text: String) {
        guard !readerGone.load(ordering: .relaxed) else { return }
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    if errno == EPIPE { readerGone.store(true, ordering: .relaxed) }
                    return
                }
                offset += written
            }
        }
    }
}
