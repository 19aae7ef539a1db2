/// A database that holds no store, for commands that must not create one.
package struct StoreMissingError: Error, CustomStringConvertible {
    package var description: String
}
