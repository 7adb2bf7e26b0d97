# rill_add_plugin(NAME SOURCES src... [OUTPUT_DIRECTORY dir] [INSTALL_DESTINATION dir])
#
# Builds a Rill op-kernel plugin: a module library named librill_NAME.so, compiled with
# hidden visibility and linked with a version script so that it exports only its
# RillGetPlugin entry point. Links Rill::sdk (headers only: a plugin never links the host).
# The target is rill_NAME.
function(rill_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY;INSTALL_DESTINATION" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "rill_add_plugin(${name}): no SOURCES given")
  endif()
  set(target rill_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE Rill::sdk)
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "rill_${name}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(RILL_PLUGIN_VERSION_SCRIPT AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
    target_link_options(${target} PRIVATE "-Wl,--version-script=${RILL_PLUGIN_VERSION_SCRIPT}")
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
  if(ARG_INSTALL_DESTINATION)
    install(TARGETS ${target} LIBRARY DESTINATION ${ARG_INSTALL_DESTINATION})
  endif()
endfunction()
