/// The fields of a value type kept in one heap object, copied only when a shared one is changed.
///
/// For the public values the engine hands around many times per download (``DownloadRequest``,
/// ``DownloadResult``, ``DownloadProgress``, ``DownloadOptions``): a struct with a dozen strings and arrays
/// retains each of them whenever it is copied, and copying one reference is a single retain. The value keeps
/// its meaning: a copy that is changed gets its own fields first (`isKnownUniquelyReferenced`), so no other
/// copy ever sees the change.
///
/// The owner's accessors read `box.fields.x`, assign `unique.fields.x = new` and change in place through
/// `unique.fields.x`: plain loads and stores, no accessor coroutine whose frame (big enough to hold a copy
/// of the fields) would be allocated on the heap for each change.
///
/// `@unchecked Sendable`: a box is changed only while one value holds its only reference, so no other thread
/// can be reading it then.
struct CopyOnWrite<Fields: Sendable>: @unchecked Sendable {
    final class Box {
        /// Unchecked: a box is changed only through the one value that holds it, whose own accesses are
        /// checked statically (it is a struct), so the dynamic check of a class property (`swift_beginAccess`
        /// on every access) finds nothing to catch.
        @exclusivity(unchecked) var fields: Fields
        init(_ fields: Fields) { self.fields = fields }

        /// A box of its own for a value about to change a shared one; out of line, since it is rare and its
        /// copy of the fields takes room.
        @inline(never)
        func copy() -> Box { Box(fields) }
    }

    /// The box, for reading (`box.fields.x`).
    private(set) var box: Box

    init(_ fields: Fields) {
        box = Box(fields)
    }

    /// The box, made this value's own first (copied when shared), for changing (`unique.fields.x = new`).
    var unique: Box {
        mutating get {
            if !isKnownUniquelyReferenced(&box) { box = box.copy() }
            return box
        }
    }

    /// The fields, read in place (for comparing and mirroring them whole).
    var value: Fields {
        _read { yield box.fields }
    }

    /// Whether `self` and `other` share one box (for tests: a copy shares until it is changed).
    func sharesStorage(with other: CopyOnWrite) -> Bool { box === other.box }
}
