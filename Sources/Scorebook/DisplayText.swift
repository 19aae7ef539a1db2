/// Text as a terminal shows it: control characters made visible, and how many columns a string
/// takes ("table columns line up for wide characters"; "text from other machines
/// is printed with control characters escaped").
public enum DisplayText {
    /// Whether a scalar is a control character: C0 (U+0000–U+001F), DEL (U+007F) or C1
    /// (U+0080–U+009F), the general category Cc. A terminal acts on these (ESC starts an escape
    /// sequence, U+009B is an 8-bit CSI), so text that came from elsewhere never reaches it raw.
    @inlinable
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `text` with every control character written as `\u{XX}` (hexadecimal, upper case): ESC
    /// becomes `\u{1B}`, DEL `\u{7F}`, a newline `\u{A}`. Everything else is left as it is; a
    /// string without control characters comes back unchanged.
    public static func escapingControls(_ text: String) -> String {
        escapingControls(text, keepingNewlines: false)
    }

    /// Like `escapingControls`, but keeps `\n` (for output made of several lines on purpose).
    public static func escapingControls(_ text: String, keepingNewlines: Bool) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) && !(keepingNewlines && $0 == "\n") }) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isControl(scalar) && !(keepingNewlines && scalar == "\n") {
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// The columns a terminal gives `text`: the sum of its characters' widths.
    public static func width(_ text: String) -> Int {
        var total = 0
        for character in text { total += width(of: character) }
        return total
    }

    /// Columns of one character (grapheme cluster): 2 for an emoji shown as emoji (emoji
    /// presentation, or text-default emoji followed by U+FE0F) and for East Asian Wide and
    /// Fullwidth characters; 0 for a cluster made only of zero-width scalars (combining marks,
    /// joiners, variation selectors, format characters); 1 otherwise.
    public static func width(of character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if first.value < 0x7F, scalars.count == 1 { return first.value < 0x20 ? 0 : 1 }
        if first.properties.isEmojiPresentation { return 2 }
        if first.properties.isEmoji, scalars.contains("\u{FE0F}") { return 2 }
        if isWide(first) { return 2 }
        if scalars.allSatisfy(isZeroWidth) { return 0 }
        return 1
    }

    static func isZeroWidth(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return true
        default: return scalar.value == 0x200B || (0x1160...0x11FF).contains(scalar.value)  // ZWSP, Hangul medial vowels and finals
        }
    }

    /// East Asian Width W or F (Unicode 15, UAX #11), the ranges that are not emoji.
    static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        var low = 0
        var high = wideRanges.count - 1
        while low <= high {
            let middle = (low + high) / 2
            let range = wideRanges[middle]
            if value < range.lowerBound {
                high = middle - 1
            } else if value > range.upperBound {
                low = middle + 1
            } else {
                return true
            }
        }
        return false
    }

    /// Sorted, disjoint.
    static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F,  // Hangul Jamo initial consonants
        0x2329...0x232A,  // angle brackets
        0x2E80...0x303E,  // CJK radicals, Kangxi, ideographic description, CJK symbols and punctuation
        0x3041...0x33FF,  // Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, Kanbun, CJK strokes, enclosed and compatibility
        0x3400...0x4DBF,  // CJK Extension A
        0x4E00...0x9FFF,  // CJK Unified Ideographs
        0xA000...0xA4CF,  // Yi
        0xA960...0xA97F,  // Hangul Jamo Extended-A
        0xAC00...0xD7A3,  // Hangul syllables
        0xF900...0xFAFF,  // CJK compatibility ideographs
        0xFE10...0xFE19,  // vertical forms
        0xFE30...0xFE6F,  // CJK compatibility forms, small form variants
        0xFF00...0xFF60,  // fullwidth forms
        0xFFE0...0xFFE6,  // fullwidth signs
        0x16FE0...0x16FE4,  // ideographic symbols
        0x17000...0x18CFF,  // Tangut, Khitan
        0x1AFF0...0x1B2FF,  // Kana supplement and extensions, Nushu
        0x1F200...0x1F202,  // enclosed ideographic supplement
        0x1F210...0x1F23B,
        0x1F240...0x1F248,
        0x1F250...0x1F251,
        0x1F260...0x1F265,
        0x20000...0x2FFFD,  // CJK Extensions B–F, compatibility supplement
        0x30000...0x3FFFD,  // CJK Extensions G–H
    ]
}
