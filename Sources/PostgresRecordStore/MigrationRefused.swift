/// Why `migrate` refused its target.
package struct MigrationRefused: Error, CustomStringConvertible {
    package var description: String
}
