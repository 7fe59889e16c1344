# tools/examples/compare_with_cli.cmake — CTest script: runs `layoutsim run SCENARIO
# --json` and `check_and_run SCENARIO --json` and fails unless the two JSON summaries
# are the same bytes and the step time the example prints is the JSON's.
#   cmake -DLAYOUTSIM=... -DEXAMPLE=... -DSCENARIO=... -DWORK_DIR=... -P compare_with_cli.cmake
file(MAKE_DIRECTORY ${WORK_DIR})
set(cli_json ${WORK_DIR}/cli.json)
set(example_json ${WORK_DIR}/example.json)

execute_process(COMMAND ${LAYOUTSIM} run ${SCENARIO} --json ${cli_json} --quiet RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "layoutsim run ${SCENARIO} exited ${rc}")
endif()
execute_process(COMMAND ${EXAMPLE} ${SCENARIO} --json ${example_json} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_and_run ${SCENARIO} exited ${rc}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${cli_json} ${example_json} RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "check_and_run's JSON summary differs from `layoutsim run --json` (${cli_json} vs ${example_json})")
endif()

# The printed step time, read back as a number, equals the CLI's (both round-trip exactly).
file(READ ${cli_json} cli_text)
string(JSON cli_step GET "${cli_text}" step_time_s)
if(NOT out MATCHES "step_time_s: ([^\n]+)")
  message(FATAL_ERROR "check_and_run printed no step time:\n${out}")
endif()
set(printed ${CMAKE_MATCH_1})
if(NOT printed EQUAL cli_step)
  message(FATAL_ERROR "check_and_run printed step_time_s ${printed}, the CLI's JSON has ${cli_step}")
endif()
message(STATUS "check_and_run matches layoutsim run: step_time_s ${printed}")
