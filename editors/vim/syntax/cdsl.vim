" Vim syntax file
" Language:    cdsl (checked collective programs, .cdsl)
" Maintainer:  the cdsl authors
" License:     MIT
" The keywords are those of grammar/lexer.re; tests/parse/editors.sh keeps this file to them.

if exists("b:current_syntax")
  finish
endif

syn keyword cdslKeyword     import def program implements scratch let
syn keyword cdslConditional if else
syn keyword cdslRepeat      for in
syn keyword cdslChannel     switch peer port
syn keyword cdslCollective  allgather reducescatter allreduce barrier custom alltoall broadcast reduce
syn keyword cdslOrder       relaxed release acquire
syn keyword cdslBuiltin     rank nranks chunks input output
syn match   cdslOperation   "\.\@<=\<\(signal\|wait\|flush\|store\|reduce_store\|reduce\|put\|get\|send_packets\|recv_packets\)\>"
syn match   cdslLocalOp     "\<\(copy\|reduce\)\>\ze\s*("
syn match   cdslNumber      "\<0[xX]\x\+\>"
syn match   cdslNumber      "\<\d\+\>"
syn match   cdslRange       "\.\."
syn region  cdslString      start=+"+ end=+"\|$+
syn keyword cdslTodo        contained TODO FIXME XXX BUG
syn match   cdslComment     "//.*$" contains=cdslTodo
syn region  cdslComment     start="/\*" end="\*/" contains=cdslTodo

hi def link cdslKeyword     Keyword
hi def link cdslConditional Conditional
hi def link cdslRepeat      Repeat
hi def link cdslChannel     Type
hi def link cdslCollective  Type
hi def link cdslOrder       Constant
hi def link cdslBuiltin     Identifier
hi def link cdslOperation   Function
hi def link cdslLocalOp     Function
hi def link cdslNumber      Number
hi def link cdslRange       Operator
hi def link cdslString      String
hi def link cdslTodo        Todo
hi def link cdslComment     Comment

let b:current_syntax = "cdsl"
