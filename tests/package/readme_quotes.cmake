# cmake -DREADME=README.md "-DFILES=a.cpp;b.cpp" -P readme_quotes.cmake
# Fails unless README contains each file whole, as a ```cpp block: the quoted quickstarts cannot
# drift from the ones that are compiled.
file(READ "${README}" readme)
foreach(file IN LISTS FILES)
  file(READ "${file}" text)
  string(FIND "${readme}" "```cpp\n${text}```" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${README} does not quote ${file} as it is now: copy the whole file into "
                        "its ```cpp block")
  endif()
endforeach()
