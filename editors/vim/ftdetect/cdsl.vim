" .cdsl files are cdsl collective programs (editors/vim/syntax/cdsl.vim).
autocmd BufRead,BufNewFile *.cdsl setfiletype cdsl
