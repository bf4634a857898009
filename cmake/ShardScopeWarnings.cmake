# Warnings for the project's own targets (not for third-party headers, which come in as SYSTEM).
add_library(shardscope_warnings INTERFACE)
target_compile_options(shardscope_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wcast-align -Wunused -Woverloaded-virtual -Wimplicit-fallthrough>)
if(SHARDSCOPE_WERROR)
  target_compile_options(shardscope_warnings INTERFACE -Werror)
endif()
