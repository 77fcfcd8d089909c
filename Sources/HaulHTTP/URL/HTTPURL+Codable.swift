/// A URL is encoded as one string, the absolute URL it parses back from — user information included
/// (percent-encoded), unlike ``HTTPURL/description``: a decoded URL must authenticate as the original did.
/// Treat an encoding as you treat the URL itself. Decoding parses the string as ``HTTPURL/init(_:)`` does,
/// so a malformed one is a `DecodingError`, never a different URL.
extension HTTPURL: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try HTTPURL(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an http(s) URL: \(error)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(absoluteText)
    }

    /// `scheme://[user[:password]@]host[:port]/path[?query]`; parses back to an equal URL.
    package var absoluteText: String {
        var text = scheme.rawValue + "://"
        if let userInfo {
            text += Self.percentEncoded(userInfo.user)
            if let password = userInfo.password { text += ":" + Self.percentEncoded(password) }
            text += "@"
        }
        return text + hostHeader + requestTarget
    }

    /// Every byte but RFC 3986's unreserved ones as `%HH`: user information is stored decoded, and `:`, `@`
    /// or `/` in it must not read as delimiters when the text is parsed again.
    private static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
