# ASan + UBSan for the non-GUI libraries and their tests (CI runs this configuration too).
if(SHARDSCOPE_SANITIZE)
  set(_ss_san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_compile_options(${_ss_san})
  add_link_options(${_ss_san})
endif()
