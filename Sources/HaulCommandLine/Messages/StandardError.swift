import Glibc
import HaulIO
import Synchronization
import SystemPackage

/// Unbuffered writes to stderr (progress and errors must appear at once, in order).
///
/// SIGPIPE is ignored (by the `haul` program), so a reader that went away (`haul URL 2>&1 | head -1`) shows as
/// EPIPE: nothing more is written to stderr then, and the downloads go on to their usual end and exit status,
/// as curl's do. Losing the messages is the reader's choice; losing the download would not be.
public enum StandardError {
    /// Set by the first write that found stderr's reader gone.
    private static let readerGone = Atomic<Bool>(false)

    public static func write(_ text: String) {
        guard !readerGone.load(ordering: .relaxed) else { return }
        var text = text
        text.withUTF8 { bytes in
            do throws(SystemError) {
                try FileDescriptor.standardError.writeAll(UnsafeRawBufferPointer(bytes))
            } catch {
                if error.code == .brokenPipe { readerGone.store(true, ordering: .relaxed) }
            }
        }
    }
}

/// The terminal's width, for the progress bar.
public enum Terminal {
    /// The columns of the terminal on stderr, or 80 when it is not one.
    public static func columns() -> Int {
        var size = winsize()
        if ioctl(2, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }
}
