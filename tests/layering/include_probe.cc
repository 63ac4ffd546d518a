// Built only by the layering tests (tests/layering/CMakeLists.txt): one
// #include, compiled with the include roots a layer's own sources get, so
// the test sees whether the build lets that layer include that header.
#include ROCED_LAYERING_HEADER
