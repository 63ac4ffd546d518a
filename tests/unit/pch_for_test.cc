// The translation unit that builds the test binaries' precompiled header
// (ROCED_PCH, tests/CMakeLists.txt); it has no code of its own.
