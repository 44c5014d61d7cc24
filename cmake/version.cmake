# Writes OUT (a header defining SPLAT_VERSION) from the git checkout SRC: "splat <commit>", with
# "-dirty" when tracked files differ from it, "splat unknown" outside a checkout. Run at every
# build (not only at configure time), and the header is rewritten only when the text changes.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(version "splat unknown")
else()
  execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(version "splat ${commit}")
  if(NOT changes STREQUAL "")
    string(APPEND version "-dirty")
  endif()
endif()
set(text "#pragma once\n#define SPLAT_VERSION \"${version}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
