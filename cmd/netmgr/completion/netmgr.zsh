#compdef netmgr netexec netkill netstatus reserve unreserve
# zsh completion for netmgr and its links netexec, netkill, netstatus,
# reserve and unreserve. Load it with: source <(netmgr completion zsh)
# or save it as _netmgr in a directory of $fpath.
# The command itself lists what may come next (--generate-bash-completion).

_netmgr() {
  local -a opts
  local cur=${words[-1]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}

if [[ "$funcstack[1]" == "_netmgr" ]]; then
  _netmgr "$@"
else
  compdef _netmgr netmgr netexec netkill netstatus reserve unreserve
fi
