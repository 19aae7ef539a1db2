import Foundation

/// Opaque tokens (sync tokens, continuation markers, cursors) travel as standard base64, since
/// some CloudKit clients decode them and crash on anything else.
public enum OpaqueToken {
    public static func encode(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    public static func decode(_ token: String) -> String? {
        guard token.utf8.count <= 1024, let data = Data(base64Encoded: token) else { return nil }
        return String(data: data, encoding: .utf8)
    }
}
