import ArgumentParser

/// A byte count or rate as people type it: `500K`, `10M`, `1.5G`, `4096` (binary multiples, like curl).
struct ByteSize: ExpressibleByArgument, Sendable {
    let bytes: Int64

    init?(argument: String) {
        var text = Substring(argument.lowercased())
        if text.hasSuffix("ib") { text = text.dropLast(2) } else if text.hasSuffix("b") { text = text.dropLast() }
        var multiplier: Double = 1
        switch text.last {
        case "k": multiplier = 1024
        case "m": multiplier = 1024 * 1024
        case "g": multiplier = 1024 * 1024 * 1024
        case "t": multiplier = 1024 * 1024 * 1024 * 1024
        default: break
        }
        if multiplier != 1 { text = text.dropLast() }
        guard let number = Double(text), number.isFinite, number > 0, number * multiplier < 9.2e18 else { return nil }
        bytes = Int64(number * multiplier)
    }
}
