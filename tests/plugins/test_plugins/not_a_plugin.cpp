// A shared library without the plugin entry points (e.g. a stray .so in the plugin folder).
extern "C" __attribute__((visibility("default"))) int some_unrelated_function(void) { return 3; }
