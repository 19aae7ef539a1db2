import ArgumentParser
import Scorebook

struct PersonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "person", abstract: "Add, list and delete people.",
        subcommands: [Add.self, Edit.self, List.self, Delete.self, Avatar.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a person; prints the new record name.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "First name.") var first: String
        @Argument(help: "Last name.") var last: String?
        @Option(name: .long, help: "Email address.") var email: String?
        @Flag(name: .long, help: "Add the person even when the book has someone of the same name.") var allowDuplicate = false

        func run() throws {
            let person = try global.openScorebook().addPerson(firstName: first, lastName: last, email: email,
                                                              allowDuplicate: allowDuplicate)
            emit(Output.created(person, json: global.json))
        }
    }

    struct Edit: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "edit", abstract: "Change a person's names or email (an empty value clears it).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The person (REF).") var reference: String
        @Option(name: .long, help: "New first name.") var first: String?
        @Option(name: .long, help: "New last name.") var last: String?
        @Option(name: .long, help: "New email address.") var email: String?

        func run() throws {
            let person = try global.openScorebook().editPerson(reference: reference, firstName: first, lastName: last, email: email)
            emit(Output.created(person, json: global.json))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List people.")
        @OptionGroup var global: GlobalOptions

        func run() throws {
            let people = try global.openScorebook().all(Person.self).sorted {
                $0.fullName.lowercased() != $1.fullName.lowercased() ? $0.fullName.lowercased() < $1.fullName.lowercased()
                    : $0.recordName < $1.recordName
            }
            emit(Output.people(people, json: global.json))
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Delete a person, with their players and scores.",
            discussion: "When finished matches change, asks first on a terminal; elsewhere needs --yes.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The person (REF).") var reference: String
        @Flag(name: .long, help: "Delete without asking, even when finished matches change.") var yes = false

        func run() throws {
            try DeletionConfirmation.delete(Person.self, reference: reference, yes: yes, global: global)
        }
    }

    struct Avatar: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "avatar", abstract: "Set a person's avatar from a picture file, remove it, or save it to a file.",
            usage: "scorebook person avatar REF FILE | --remove | --save FILE")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The person (REF).") var reference: String
        @Argument(help: "The picture to set (at most 50 MB).") var file: String?
        @Flag(name: .long, help: "Remove the avatar.") var remove = false
        @Option(name: .long, help: "Write the avatar to this file.") var save: String?
        @Flag(name: .long, help: "With --save: replace the file if it exists.") var force = false

        func validate() throws {
            guard [file != nil, remove, save != nil].filter({ $0 }).count == 1 else {
                throw ValidationError("give a picture FILE, --remove or --save FILE")
            }
        }

        func run() throws {
            let book = try global.openScorebook()
            if let save {
                let picture = try book.saveAvatar(personReference: reference, to: save, overwrite: force)
                emit(Output.pictureSaved(picture, to: save, json: global.json))
            } else if remove {
                emit(Output.created(try book.removeAvatar(personReference: reference), json: global.json))
            } else if let file {
                emit(Output.created(try book.setAvatar(personReference: reference, file: file), json: global.json))
            }
        }
    }
}
