# What `cmake --install` (and CPack) gives a user who installs ShardScope on a cluster node:
#
#   bin/shardscope                                the CLI (links no Qt; `gui` loads the app library)
#   lib/shardscope/shardscope_gui.so              the desktop app (SHARDSCOPE_GUI; app/CMakeLists.txt)
#   lib/shardscope/plugins/*.so                   the built-in analyses (plugins/CMakeLists.txt)
#   lib/shardscope/libshardscope_collector.so     the CUPTI collector (when CUPTI was found)
#   share/shardscope/python/shardscope/           the Python package (hooks, sitecustomize, apply_plan)
#   share/shardscope/scripts/                     the training and check scripts record's checks use
#
# `record` finds the collector and the package relative to its executable first
# (profiler/collector/launcher/locate.cpp), so an installed tree works with the build and source
# folders gone, and keeps working when the whole prefix is copied elsewhere.
#
# -DSHARDSCOPE_BUNDLE_RUNTIME_DEPS=ON (scripts/gpu/kit.sh): the install also copies every shared
# library the CLI, the plugins and the collector need into lib/shardscope/ (found through the
# RPATHs below), except the C/C++ runtime, the CUDA driver and CUPTI, so that the prefix runs on a
# machine that has none of our Debian packages. A .deb built without it depends on the packages
# instead (CPACK_DEBIAN_PACKAGE_DEPENDS below).

option(SHARDSCOPE_BUNDLE_RUNTIME_DEPS "Copy the non-system shared libraries into the install tree (relocatable bundle)" OFF)

# Installed binaries look for their libraries beside themselves: the CLI in ../lib/shardscope,
# the plugins one folder up. Harmless where the libraries come from the system instead.
# The plugins are the plugin folder's shared modules (ss_add_plugin in plugins/CMakeLists.txt).
set(_ss_plugins "")
get_property(_targets DIRECTORY ${PROJECT_SOURCE_DIR}/plugins PROPERTY BUILDSYSTEM_TARGETS)
foreach(_target ${_targets})
  get_target_property(_type ${_target} TYPE)
  if(_type STREQUAL "MODULE_LIBRARY")
    list(APPEND _ss_plugins ${_target})
  endif()
endforeach()
set_target_properties(shardscope PROPERTIES INSTALL_RPATH "$ORIGIN/../lib/shardscope")
foreach(_plugin ${_ss_plugins})
  set_target_properties(${_plugin} PROPERTIES INSTALL_RPATH "$ORIGIN/..")
endforeach()

if(TARGET shardscope_collector)
  # The collector needs only CUPTI (and the C/C++ runtime): SQLite is linked in. Its RPATH keeps
  # the CUDA it was built against, then the usual toolkit folders of a CUDA 13 machine; a libcupti
  # the process already loaded (PyTorch's wheel) or LD_PRELOADed is used as it is.
  set_property(TARGET shardscope_collector APPEND PROPERTY INSTALL_RPATH
    "$ORIGIN"
    "/usr/local/cuda/extras/CUPTI/lib64"
    "/usr/local/cuda/lib64"
    "/usr/local/cuda/targets/x86_64-linux/lib")
  install(TARGETS shardscope_collector LIBRARY DESTINATION lib/shardscope)
endif()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/profiler/python/shardscope
  DESTINATION share/shardscope/python
  PATTERN "__pycache__" EXCLUDE
  PATTERN "*.pyc" EXCLUDE)
# The training scripts that record's checks run (docs/collector.md, docs/gpu-runs.md).
install(PROGRAMS
  ${PROJECT_SOURCE_DIR}/scripts/fsdp_train_sample.py
  ${PROJECT_SOURCE_DIR}/scripts/fsdp_tp_train.py
  ${PROJECT_SOURCE_DIR}/scripts/closed_loop.py
  ${PROJECT_SOURCE_DIR}/scripts/memory_vs_tracker.py
  DESTINATION share/shardscope/scripts)

if(SHARDSCOPE_BUNDLE_RUNTIME_DEPS)
  # Resolved from the installed files (the build tree's carry a padded RPATH that
  # GET_RUNTIME_DEPENDENCIES refuses), after everything above is installed; the C/C++ runtime,
  # the loader, the CUDA driver and CUPTI stay the target machine's.
  install(CODE "
    set(_ss_prefix \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}\")
    file(GLOB _ss_plugins \"\${_ss_prefix}/lib/shardscope/plugins/*.so\")
    file(GLOB _ss_libraries \"\${_ss_prefix}/lib/shardscope/libshardscope_collector.so\")
    file(GET_RUNTIME_DEPENDENCIES
      EXECUTABLES \"\${_ss_prefix}/bin/shardscope\"
      MODULES \${_ss_plugins}
      LIBRARIES \${_ss_libraries}
      RESOLVED_DEPENDENCIES_VAR _ss_deps
      UNRESOLVED_DEPENDENCIES_VAR _ss_missing
      PRE_EXCLUDE_REGEXES
        \"^linux-vdso\" \"^ld-linux\" \"^libc\\\\.so\" \"^libm\\\\.so\" \"^libpthread\\\\.so\" \"^libdl\\\\.so\"
        \"^librt\\\\.so\" \"^libutil\\\\.so\" \"^libstdc\\\\+\\\\+\\\\.so\" \"^libgcc_s\\\\.so\"
        \"^libcupti\\\\.so\" \"^libcuda\\\\.so\" \"^libnvidia\")
    if(_ss_missing)
      message(FATAL_ERROR \"ShardScope bundle: unresolved shared libraries: \${_ss_missing}\")
    endif()
    # Each as a plain file under the name the binaries ask for (libz.so.1): no symbolic links, which
    # some ways of copying a tree (the device tool's) keep only as links. file(INSTALL) adds DESTDIR
    # itself (cpack -G DEB stages with it); the files above are found under it.
    foreach(_dep \${_ss_deps})
      get_filename_component(_ss_name \"\${_dep}\" NAME)
      get_filename_component(_ss_real \"\${_dep}\" REALPATH)
      file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/lib/shardscope\" TYPE FILE FILES \"\${_ss_real}\" RENAME \"\${_ss_name}\")
    endforeach()
  ")
endif()

# Packages: `cpack -G TGZ` (the install tree as a relocatable archive) and `cpack -G DEB`.
set(CPACK_PACKAGE_NAME "shardscope")
set(CPACK_PACKAGE_VENDOR "ShardScope")
set(CPACK_PACKAGE_CONTACT "ShardScope developers <shardscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Profiler and what-if planner for FSDP training (CLI, CUPTI collector, Python hooks)")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_GENERATOR "TGZ;DEB")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
# Debian 12's packages; libcupti comes from the CUDA toolkit or PyTorch's wheel, not a package.
set(_deb_depends "libc6 (>= 2.34), libstdc++6 (>= 12), libsqlite3-0, zlib1g, python3")
if(TARGET simdjson::simdjson)
  string(APPEND _deb_depends ", libsimdjson14")
endif()
if(SHARDSCOPE_GUI)
  string(APPEND _deb_depends ", libqt6widgets6, libqt6openglwidgets6, libqt6charts6")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_deb_depends}")
include(CPack)
