# Sourced by the bench/gpu_*.sh device scripts: whether a server's log says it died, one rule.
# A line that *starts* with the error counts: SGLang 0.5.17 logs "... init failed
# (ModuleNotFoundError: No module named 'openai_harmony')" and vLLM quotes "OSError: [Errno 24]"
# in its ulimit warning mid-line, and both servers go on to serve (an unanchored match killed a
# healthy SGLang on the H200 on 2026-12-03, docs/FIELD_NOTES.md section 11).
server_died() { # LOG
  grep -q "^Traceback\|kill_process_tree called\|^[A-Za-z_.]*Error: " "$1" 2>/dev/null
}
