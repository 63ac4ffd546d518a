// The translation unit that builds the one precompiled header of the gRPC,
// protobuf and Abseil headers (ROCED_PCH) that the agent's five libraries
// and rocectl's reuse (proto/CMakeLists.txt); it has no code of its own.
