import CHaulSystem
import Glibc
import SystemPackage

// The splice side of the syscall layer: a pipe between a socket and a file, and the two `splice` calls that
// move bytes through it without copying them into user space (socket → pipe, pipe → file at an offset).

/// A non-blocking pipe, both ends owned, used to splice a socket's bytes into a file.
package struct SplicePipe: ~Copyable {
    /// The end bytes are spliced out of (into the file).
    package let readEnd: OwnedFileDescriptor
    /// The end bytes are spliced into (from the socket).
    package let writeEnd: OwnedFileDescriptor
    /// The pipe's capacity in bytes: the most one splice from the socket moves.
    package let capacity: Int

    /// `pipe2(O_CLOEXEC | O_NONBLOCK)`, then `F_SETPIPE_SZ` to `size` (the capacity stays what the kernel
    /// gave, 64 KiB by default, when it refuses: `size` above `/proc/sys/fs/pipe-max-size` or the user's pipe
    /// quota spent).
    package init(size: Int) throws(SystemError) {
        var ends: [Int32] = [0, 0]
        _ = try blockingSyscall("pipe2") { haul_pipe2_nonblocking(&ends) }
        readEnd = OwnedFileDescriptor(FileDescriptor(rawValue: ends[0]))
        writeEnd = OwnedFileDescriptor(FileDescriptor(rawValue: ends[1]))
        let raised = haul_set_pipe_size(ends[1], Int32(clamping: size))
        let capacity = raised > 0 ? raised : haul_pipe_size(ends[1])
        self.capacity = capacity > 0 ? Int(capacity) : 65536
    }
}

extension FileDescriptor {
    /// `splice` of up to `count` bytes from this (non-blocking) socket into `pipe`'s write end, without
    /// blocking on either: `.processed(0)` means the peer closed its side, `.wouldBlock` that the socket has
    /// nothing (or the pipe no room).
    @inline(__always)
    package func splice(toPipe pipe: FileDescriptor, count: Int) throws(SystemError) -> IOResult<Int> {
        try syscall("splice", .nonBlocking) {
            haul_splice(rawValue, nil, pipe.rawValue, nil, count, haul_SPLICE_F_MOVE | haul_SPLICE_F_NONBLOCK)
        }
    }

    /// Moves exactly `count` bytes that wait in this pipe (its read end) into `file` at `offset` (`splice`
    /// with `off_out`, looping over short moves; the file's own position is not used or changed).
    package func spliceAll(_ count: Int, into file: FileDescriptor, at offset: Int64) throws(SystemError) {
        var done = 0
        try spliceAll(count, into: file, at: offset, moved: &done)
    }

    /// ``spliceAll(_:into:at:)`` that counts in `done` the bytes moved, also when it throws.
    package func spliceAll(_ count: Int, into file: FileDescriptor, at offset: Int64, moved done: inout Int) throws(SystemError) {
        while done < count {
            var at = offset + Int64(done)
            let moved = try blockingSyscall("splice") {
                haul_splice(rawValue, nil, file.rawValue, &at, count - done, haul_SPLICE_F_MOVE)
            }
            // Bytes known to be in the pipe cannot run out; a zero would loop for ever.
            guard moved > 0 else { throw SystemError(call: "splice", errno: EIO) }
            done += moved
        }
    }
}
