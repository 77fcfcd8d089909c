/// A small, strict XML reader for Metalink documents, which come from the network and are hostile until
/// proven otherwise.
///
/// It reads what a Metalink needs — elements, attributes, text, character references, the five predefined
/// entities, comments, processing instructions, CDATA and the XML declaration — into a tree, and nothing
/// more. There is no DTD: a `<!DOCTYPE` is refused, so there are no external or user-defined entities to
/// expand (no "billion laughs", no file or network reads). The input, the nesting depth, the number of
/// elements and of attributes per element are bounded (``MetalinkLimits``); every error names the byte
/// offset where it was found. The document must be UTF-8.
struct MetalinkXMLReader {
    /// An element with its namespace resolved.
    struct Element {
        /// The namespace URI (`xmlns` or a prefix's), or "" when none is in scope.
        var namespace: String
        /// The local name (without its prefix).
        var name: String
        var attributes: [(name: String, value: String)]
        var children: [Element]
        /// The element's own text (character data and CDATA, references replaced), children's excluded.
        var text: String
        /// Byte offset of the element's `<`, for errors.
        var offset: Int

        func attribute(_ name: String) -> String? { attributes.first { $0.name == name }?.value }
    }

    private let bytes: [UInt8]
    private let limits: MetalinkLimits
    private var position = 0
    private var elementCount = 0

    init(_ bytes: [UInt8], limits: MetalinkLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    /// Parses the whole document and returns its root element.
    static func parse(_ bytes: [UInt8], limits: MetalinkLimits) throws(MetalinkError) -> Element {
        guard bytes.count <= limits.maximumBytes else {
            throw MetalinkError(offset: 0, "the document has \(bytes.count) bytes, more than the \(limits.maximumBytes) allowed")
        }
        try checkCharacters(bytes)
        var reader = MetalinkXMLReader(bytes, limits: limits)
        return try reader.document()
    }

    /// Valid UTF-8 throughout, and no character XML forbids (C0 controls other than tab, LF and CR).
    static func checkCharacters(_ bytes: [UInt8]) throws(MetalinkError) {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x80 {
                if byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D {
                    throw MetalinkError(offset: index, "control character 0x\(String(byte, radix: 16)) is not allowed in XML")
                }
                index += 1
                continue
            }
            let length: Int, minimum: UInt32
            var scalar: UInt32
            switch byte {
            case 0xC2...0xDF: length = 2; minimum = 0x80; scalar = UInt32(byte & 0x1F)
            case 0xE0...0xEF: length = 3; minimum = 0x800; scalar = UInt32(byte & 0x0F)
            case 0xF0...0xF4: length = 4; minimum = 0x10000; scalar = UInt32(byte & 0x07)
            default: throw MetalinkError(offset: index, "invalid UTF-8")
            }
            guard index + length <= bytes.count else { throw MetalinkError(offset: index, "invalid UTF-8 (truncated)") }
            for continuation in bytes[(index + 1)..<(index + length)] {
                guard continuation & 0xC0 == 0x80 else { throw MetalinkError(offset: index, "invalid UTF-8") }
                scalar = scalar << 6 | UInt32(continuation & 0x3F)
            }
            guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar),
                  scalar != 0xFFFE, scalar != 0xFFFF else {
                throw MetalinkError(offset: index, "invalid UTF-8")
            }
            index += length
        }
    }

    // MARK: - Document

    private mutating func document() throws(MetalinkError) -> Element {
        if hasPrefix([0xEF, 0xBB, 0xBF]) { position += 3 }  // a UTF-8 byte order mark
        if hasPrefix("<?xml") && position + 5 < bytes.count && isSpace(bytes[position + 5]) {
            try declaration()
        }
        var root: Element?
        while true {
            skipSpace()
            guard position < bytes.count else { break }
            if hasPrefix("<!--") {
                try comment()
            } else if hasPrefix("<?") {
                try processingInstruction()
            } else if hasPrefix("<!DOCTYPE") || hasPrefix("<!doctype") {
                throw MetalinkError(offset: position, "a document type declaration (<!DOCTYPE) is refused: Metalink needs none, and it could define entities")
            } else if bytes[position] == UInt8(ascii: "<") {
                guard root == nil else { throw MetalinkError(offset: position, "a second root element") }
                root = try element(depth: 1, scopes: [:])
            } else {
                throw MetalinkError(offset: position, root == nil ? "text before the root element" : "text after the root element")
            }
        }
        guard let root else { throw MetalinkError(offset: position, "no root element") }
        return root
    }

    /// `<?xml version="1.0" encoding="UTF-8"?>`: the version must be 1.x, the encoding (if named) UTF-8.
    private mutating func declaration() throws(MetalinkError) {
        let start = position
        guard let end = find("?>", from: position) else { throw MetalinkError(offset: start, "the XML declaration does not end") }
        let inner = String(decoding: bytes[(start + 5)..<end], as: UTF8.self)
        position = end + 2
        var sawVersion = false
        for pair in Self.pseudoAttributes(inner) {
            switch pair.name {
            case "version":
                guard pair.value.hasPrefix("1.") else { throw MetalinkError(offset: start, "XML version \(pair.value) is not supported") }
                sawVersion = true
            case "encoding":
                guard ["utf-8", "utf8"].contains(pair.value.lowercased()) else {
                    throw MetalinkError(offset: start, "encoding \(pair.value) is not supported; a Metalink document must be UTF-8")
                }
            case "standalone": break
            default: throw MetalinkError(offset: start, "the XML declaration has an unknown part \"\(pair.name)\"")
            }
        }
        guard sawVersion else { throw MetalinkError(offset: start, "the XML declaration has no version") }
    }

    private static func pseudoAttributes(_ text: String) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        var rest = Substring(text)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
            guard let equals = rest.firstIndex(of: "=") else { break }
            let name = rest[..<equals].trimmingSpaces()
            rest = rest[rest.index(after: equals)...].drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
            guard let quote = rest.first, quote == "\"" || quote == "'" else { result.append((String(name), "")); break }
            rest = rest.dropFirst()
            guard let close = rest.firstIndex(of: quote) else { result.append((String(name), "")); break }
            result.append((String(name), String(rest[..<close])))
            rest = rest[rest.index(after: close)...]
        }
        return result
    }

    private mutating func comment() throws(MetalinkError) {
        let start = position
        guard let end = find("--", from: position + 4) else { throw MetalinkError(offset: start, "a comment does not end") }
        guard end + 2 < bytes.count, bytes[end + 2] == UInt8(ascii: ">") else {
            throw MetalinkError(offset: end, "\"--\" inside a comment")
        }
        position = end + 3
    }

    private mutating func processingInstruction() throws(MetalinkError) {
        let start = position
        guard let end = find("?>", from: position + 2) else { throw MetalinkError(offset: start, "a processing instruction does not end") }
        let target = bytes[(start + 2)...].prefix { !isSpace($0) && $0 != UInt8(ascii: "?") }
        guard !target.isEmpty, String(decoding: target, as: UTF8.self).lowercased() != "xml" else {
            throw MetalinkError(offset: start, "a misplaced XML declaration or an unnamed processing instruction")
        }
        position = end + 2
    }

    // MARK: - Elements

    private mutating func element(depth: Int, scopes: [String: String]) throws(MetalinkError) -> Element {
        let start = position
        guard depth <= limits.maximumDepth else {
            throw MetalinkError(offset: start, "elements nest deeper than \(limits.maximumDepth)")
        }
        elementCount += 1
        guard elementCount <= limits.maximumElements else {
            throw MetalinkError(offset: start, "more than \(limits.maximumElements) elements")
        }
        position += 1  // `<`
        let qualifiedName = try name()
        var rawAttributes: [(name: String, value: String, offset: Int)] = []
        var selfClosing = false
        while true {
            let hadSpace = skipSpace()
            guard position < bytes.count else { throw MetalinkError(offset: start, "the start tag <\(qualifiedName)> does not end") }
            if bytes[position] == UInt8(ascii: ">") { position += 1; break }
            if hasPrefix("/>") { position += 2; selfClosing = true; break }
            guard hadSpace else { throw MetalinkError(offset: position, "expected a space, > or /> in <\(qualifiedName)>") }
            let attributeOffset = position
            let attributeName = try name()
            skipSpace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "=") else {
                throw MetalinkError(offset: position, "attribute \(attributeName) has no =")
            }
            position += 1
            skipSpace()
            let value = try attributeValue()
            guard !rawAttributes.contains(where: { $0.name == attributeName }) else {
                throw MetalinkError(offset: attributeOffset, "attribute \(attributeName) given twice")
            }
            rawAttributes.append((attributeName, value, attributeOffset))
            guard rawAttributes.count <= limits.maximumAttributes else {
                throw MetalinkError(offset: attributeOffset, "more than \(limits.maximumAttributes) attributes on one element")
            }
        }

        // Namespaces: `xmlns` and `xmlns:prefix` declared here apply to this element and its content.
        var scopes = scopes
        var attributes: [(name: String, value: String)] = []
        for attribute in rawAttributes {
            if attribute.name == "xmlns" {
                scopes[""] = attribute.value
            } else if attribute.name.hasPrefix("xmlns:") {
                let prefix = String(attribute.name.dropFirst(6))
                guard !attribute.value.isEmpty else {
                    throw MetalinkError(offset: attribute.offset, "namespace prefix \(prefix) is bound to nothing")
                }
                scopes[prefix] = attribute.value
            }
        }
        for attribute in rawAttributes where attribute.name != "xmlns" && !attribute.name.hasPrefix("xmlns:") {
            // Unprefixed attributes are in no namespace; prefixed ones must be declared, but Metalink reads
            // only unprefixed ones, so a prefixed attribute is kept under its full name.
            if let colon = attribute.name.firstIndex(of: ":") {
                let prefix = String(attribute.name[..<colon])
                guard prefix == "xml" || scopes[prefix] != nil else {
                    throw MetalinkError(offset: attribute.offset, "namespace prefix \(prefix) is not declared")
                }
            }
            attributes.append((attribute.name, attribute.value))
        }
        let (namespace, localName) = try resolve(qualifiedName, scopes: scopes, offset: start)
        var element = Element(namespace: namespace, name: localName, attributes: attributes, children: [], text: "", offset: start)
        if selfClosing { return element }

        // Content, up to the matching end tag.
        var text: [UInt8] = []
        while true {
            guard position < bytes.count else { throw MetalinkError(offset: start, "element <\(qualifiedName)> is not closed") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "<") {
                if hasPrefix("</") {
                    let endOffset = position
                    position += 2
                    let closing = try name()
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ">") else {
                        throw MetalinkError(offset: endOffset, "the end tag </\(closing)> does not end with >")
                    }
                    position += 1
                    guard closing == qualifiedName else {
                        throw MetalinkError(offset: endOffset, "end tag </\(closing)> does not match <\(qualifiedName)> at byte \(start)")
                    }
                    break
                } else if hasPrefix("<!--") {
                    try comment()
                } else if hasPrefix("<![CDATA[") {
                    let cdataStart = position
                    guard let end = find("]]>", from: position + 9) else { throw MetalinkError(offset: cdataStart, "a CDATA section does not end") }
                    text.append(contentsOf: bytes[(position + 9)..<end])
                    position = end + 3
                } else if hasPrefix("<?") {
                    try processingInstruction()
                } else if hasPrefix("<!") {
                    throw MetalinkError(offset: position, "a declaration (<!...) inside an element")
                } else {
                    element.children.append(try self.element(depth: depth + 1, scopes: scopes))
                }
            } else if byte == UInt8(ascii: "&") {
                text.append(contentsOf: try reference())
            } else {
                if hasPrefix("]]>") { throw MetalinkError(offset: position, "\"]]>\" outside a CDATA section") }
                text.append(byte)
                position += 1
            }
        }
        element.text = String(decoding: text, as: UTF8.self)
        return element
    }

    private func resolve(_ qualifiedName: String, scopes: [String: String], offset: Int) throws(MetalinkError) -> (String, String) {
        guard let colon = qualifiedName.firstIndex(of: ":") else { return (scopes[""] ?? "", qualifiedName) }
        let prefix = String(qualifiedName[..<colon])
        let local = String(qualifiedName[qualifiedName.index(after: colon)...])
        guard let namespace = scopes[prefix] else { throw MetalinkError(offset: offset, "namespace prefix \(prefix) is not declared") }
        guard !local.isEmpty, !local.contains(":") else { throw MetalinkError(offset: offset, "\"\(qualifiedName)\" is not a qualified name") }
        return (namespace, local)
    }

    /// An XML name (letters, digits, `_`, `-`, `.`, `:`, and anything outside ASCII; not starting with a
    /// digit, `-` or `.`).
    private mutating func name() throws(MetalinkError) -> String {
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            let isStart = byte >= 0x80 || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
            let isLater = byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            guard isStart || (isLater && position > start) else { break }
            position += 1
        }
        guard position > start else { throw MetalinkError(offset: start, "expected a name") }
        guard position - start <= 1024 else { throw MetalinkError(offset: start, "a name longer than 1024 bytes") }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    private mutating func attributeValue() throws(MetalinkError) -> String {
        let start = position
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'") else {
            throw MetalinkError(offset: start, "an attribute value is not quoted")
        }
        let quote = bytes[position]
        position += 1
        var value: [UInt8] = []
        while true {
            guard position < bytes.count else { throw MetalinkError(offset: start, "an attribute value does not end") }
            let byte = bytes[position]
            if byte == quote { position += 1; break }
            switch byte {
            case UInt8(ascii: "<"): throw MetalinkError(offset: position, "< inside an attribute value")
            case UInt8(ascii: "&"): value.append(contentsOf: try reference())
            case 0x09, 0x0A, 0x0D: value.append(UInt8(ascii: " ")); position += 1  // attribute-value normalization
            default: value.append(byte); position += 1
            }
        }
        return String(decoding: value, as: UTF8.self)
    }

    /// `&lt;` `&gt;` `&amp;` `&quot;` `&apos;`, `&#DDD;` and `&#xHHH;` as UTF-8; any other is an error (there
    /// is no DTD to define one).
    private mutating func reference() throws(MetalinkError) -> [UInt8] {
        let start = position
        guard let semicolon = bytes[position...].prefix(16).firstIndex(of: UInt8(ascii: ";")) else {
            throw MetalinkError(offset: start, "& that does not start a reference (write &amp;)")
        }
        let body = String(decoding: bytes[(start + 1)..<semicolon], as: UTF8.self)
        position = semicolon + 1
        switch body {
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "amp": return [UInt8(ascii: "&")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default: break
        }
        guard body.hasPrefix("#") else { throw MetalinkError(offset: start, "undefined entity &\(body);") }
        let digits = body.dropFirst()
        let value: UInt32?
        if digits.hasPrefix("x") {
            value = digits.count > 1 && digits.dropFirst().allSatisfy(\.isHexDigit) ? UInt32(digits.dropFirst(), radix: 16) : nil
        } else {
            value = !digits.isEmpty && digits.allSatisfy({ $0.isASCII && $0.isNumber }) ? UInt32(digits) : nil
        }
        guard let value, let scalar = Unicode.Scalar(value),
              value == 0x09 || value == 0x0A || value == 0x0D || value >= 0x20, value != 0xFFFE, value != 0xFFFF else {
            throw MetalinkError(offset: start, "&\(body); is not a character XML allows")
        }
        return Array(String(Character(scalar)).utf8)
    }

    // MARK: - Bytes

    private func hasPrefix(_ text: StaticString) -> Bool {
        text.withUTF8Buffer { prefix in
            guard bytes.count - position >= prefix.count else { return false }
            for index in 0..<prefix.count where bytes[position + index] != prefix[index] { return false }
            return true
        }
    }

    private func hasPrefix(_ prefix: [UInt8]) -> Bool {
        guard bytes.count - position >= prefix.count else { return false }
        for (index, byte) in prefix.enumerated() where bytes[position + index] != byte { return false }
        return true
    }

    private func find(_ text: StaticString, from start: Int) -> Int? {
        text.withUTF8Buffer { needle in find(needle, from: start) }
    }

    private func find(_ needle: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard start <= bytes.count - needle.count else { return nil }
        var index = start
        while index <= bytes.count - needle.count {
            if bytes[index] == needle[0] {
                var matches = true
                for offset in 1..<needle.count where bytes[index + offset] != needle[offset] { matches = false; break }
                if matches { return index }
            }
            index += 1
        }
        return nil
    }

    private func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = position
        while position < bytes.count, isSpace(bytes[position]) { position += 1 }
        return position > start
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" || first == "\n" || first == "\r" { result.removeFirst() }
        while let last = result.last, last == " " || last == "\t" || last == "\n" || last == "\r" { result.removeLast() }
        return result
    }
}
