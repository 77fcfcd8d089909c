import Testing
@testable import HaulSessions

/// The strict JSON codec under the session log and the protocol.
@Suite struct JSONTests {
    @Test func parsesEveryKindAndKeepsKeyOrder() throws {
        let value = try JSONParser.parse(#" {"b": [1, -2.5e3, true, false, null], "a": {"x": "y\n\u00e9\ud83d\ude00"}} "#)
        guard case .object(let object) = value else { Issue.record("not an object"); return }
        #expect(object.keys == ["b", "a"])
        #expect(object["b"] == .array([.number("1"), .number("-2.5e3"), .bool(true), .bool(false), .null]))
        #expect(object["a"]?.object?["x"] == .string("y\né😀"))
        #expect(value.serialized == #"{"b":[1,-2.5e3,true,false,null],"a":{"x":"y\né😀"}}"#)
    }

    @Test func serializedTextParsesBackToTheSameValue() throws {
        var object = JSONObject()
        object["control"] = .string("a\u{0}b\u{1F}c\u{7F}\u{2028}\"\\/\t")
        object["big"] = .int(Int64.max)
        object["small"] = .int(Int64.min)
        object["nested"] = .array([.object(JSONObject(["k": .null])), .array([])])
        let text = JSONValue.object(object).serialized
        #expect(!text.utf8.contains { $0 < 0x20 }, "no raw control character: \(text)")
        #expect(try JSONParser.parse(text) == .object(object))
        #expect(try JSONParser.parse(text).object?["big"]?.int64 == Int64.max)
    }

    @Test(arguments: [
        ("", "input ended"),
        ("{", "input ended"),
        (#"{"a":1,}"#, "expected a key string"),
        ("[1,]", "expected a value"),
        ("01", "leading zero"),
        ("1.", "a digit after '.'"),
        ("-", "a digit"),
        ("1e", "exponent"),
        (#""a"#, "inside a string"),
        ("\"a\u{01}\"", "raw control character"),
        (#""\x""#, "invalid escape"),
        (#""\ud800""#, "lone high surrogate"),
        (#""\udc00""#, "lone low surrogate"),
        (#""\ud800\u0041""#, "without a low one"),
        (#""\u12G4""#, "invalid hex digit"),
        (#"{"a":1,"a":2}"#, "duplicate key"),
        ("tru", "invalid literal"),
        ("nul", "invalid literal"),
        ("1 2", "after the value"),
        ("// c\n1", "expected a value"),
    ])
    func refusesWhatIsNotStrictJSON(_ input: String, _ problem: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(input) }
        do {
            _ = try JSONParser.parse(input)
        } catch {
            #expect(error.description.contains(problem), "\(input.debugDescription): \(error)")
        }
    }

    @Test func refusesInvalidUTF8AndDeepNesting() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xED, 0xA0, 0x80, 0x22]) }  // an encoded surrogate
        let deep = String(repeating: "[", count: JSONParser.maximumDepth + 1) + String(repeating: "]", count: JSONParser.maximumDepth + 1)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(deep) }
        let fine = String(repeating: "[", count: JSONParser.maximumDepth) + String(repeating: "]", count: JSONParser.maximumDepth)
        #expect((try? JSONParser.parse(fine)) != nil)
    }

    @Test func integersAreExactOrRefused() throws {
        #expect(try JSONParser.parse("9223372036854775807").int64 == Int64.max)
        #expect(try JSONParser.parse("9223372036854775808").int64 == nil, "too big is not rounded")
        #expect(try JSONParser.parse("1.0").int64 == nil, "a fraction is not an integer")
        #expect(try JSONParser.parse("-0").int64 == 0)
    }

    @Test func fieldReaderRefusesUnknownFieldsAndWrongTypes() throws {
        var reader = FieldReader(try JSONParser.parseObject(Array(#"{"a":1,"b":"x","c":true}"#.utf8)))
        #expect(try reader.integer("a", in: 0...5) == 1)
        #expect(try reader.string("b") == "x")
        #expect(throws: SchemaError(field: "c", "unknown field")) { try reader.finish() }
        var typed = FieldReader(try JSONParser.parseObject(Array(#"{"a":"1","n":7}"#.utf8)))
        #expect(throws: SchemaError.self) { try typed.integer("a", in: 0...5) }
        #expect(throws: SchemaError(field: "n", "7 is outside 0...5")) { try typed.integer("n", in: 0...5) }
        #expect(throws: SchemaError(field: "m", "missing")) { try typed.string("m") }
    }
}
