# tests/install_consumer.cmake — CTest script: installs the build into a fresh prefix,
# builds tools/examples/ as a separate project against it (find_package(layoutsim)),
# and checks the installed example's JSON against `layoutsim run` (compare_with_cli.cmake).
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DLAYOUTSIM=... -DGENERATOR=... -P install_consumer.cmake
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${prefix} failed (${rc})")
endif()
foreach(installed bin/layoutsim include/layoutsim/tools/api/layoutsim.hpp lib/cmake/layoutsim/layoutsimConfig.cmake)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "the install has no ${installed}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tools/examples -B ${WORK_DIR}/build -G ${GENERATOR}
                        -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring tools/examples against the install failed (${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building tools/examples against the install failed (${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -DLAYOUTSIM=${LAYOUTSIM} -DEXAMPLE=${WORK_DIR}/build/check_and_run
                        -DSCENARIO=${SOURCE_DIR}/scenarios/default.yaml -DWORK_DIR=${WORK_DIR}/compare
                        -P ${SOURCE_DIR}/tools/examples/compare_with_cli.cmake
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed example's output differs from layoutsim run's")
endif()
