/// Why the store could not be opened (a user-facing one-liner).
package struct StoreOpenError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
