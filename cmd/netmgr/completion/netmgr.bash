# bash completion for netmgr and its links netexec, netkill, netstatus,
# reserve and unreserve. Load it with: source <(netmgr completion bash)
# The command itself lists what may come next (--generate-bash-completion).

_netmgr_complete() {
  local cur words cword
  COMPREPLY=()
  if declare -F _init_completion >/dev/null 2>&1; then
    _init_completion -n "=:" || return
  else
    cur="${COMP_WORDS[COMP_CWORD]}"
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi
  local request=("${words[@]:0:$cword}")
  if [[ "$cur" == -* ]]; then
    request+=("$cur")
  fi
  local opts
  opts=$("${request[@]}" --generate-bash-completion 2>/dev/null)
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
}

complete -o bashdefault -o default -F _netmgr_complete netmgr netexec netkill netstatus reserve unreserve
