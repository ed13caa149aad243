"""The foundation every stage imports: errors, the config schema and YAML loading, atomic IO and the
run-directory contract, seeding, progress, geometry helpers, and the artifact formats (`core.formats`,
one module per file format: its model, writer and reader).

The package itself imports nothing, so that a light module (core.errors for the CLI's root) costs no more than
itself."""
