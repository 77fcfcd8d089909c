function __haul_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __haul_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __haul_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __haul_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __haul_parse_tokens -S
    set -l unparsed_tokens (__haul_tokens -pc)
    switch $unparsed_tokens[1]
    case 'haul'
        __haul_parse_subcommand -r 1 'Z/parallel' 'o/output=' 'd/dir=' 'i/input-file=' 'j/jobs=' 'c/connections=' 'min-segment=' 'H/header=+' 'u/user=' 'netrc' 'netrc-file=' 'x/proxy=' 'noproxy=' 'user-agent=' 'cacert=' 'capath=' 'k/insecure' 'checksum=' 'limit-rate=' 'retries=' 'connect-timeout=' 'stall-timeout=' 'Y/speed-limit=' 'y/speed-time=' 'max-time=' 'on-change=' 'restart' 'allow-overwrite' 'skip-existing' 'progress=' 'q/quiet' 'no-sync' 'checkpoint-bytes=' 'checkpoint-interval=' 'V/version' 'h/help'
        switch $unparsed_tokens[1]
        case 'help'
            __haul_parse_subcommand -r 1 
        end
    end
end

function __haul_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __haul_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __haul_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __haul_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__haul_tokens -p)
    if test -z "$(__haul_tokens -t)"
        set -l index (count (__haul_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'haul' -f
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" Z parallel' -s 'Z' -l 'parallel' -d 'Download each URL on the command line as its own file (not as mirrors), --jobs at a time.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" o output' -s 'o' -l 'output' -d 'Write the file here; - streams it in order to standard output over all connections (default: the server\'s suggested name in --dir).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" d dir' -s 'd' -l 'dir' -d 'Directory for downloaded files; created when missing (default: current).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" i input-file' -s 'i' -l 'input-file' -d 'Download every URL listed in FILE (URL, TAB mirrors, TAB out=NAME).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" j jobs' -s 'j' -l 'jobs' -d 'Downloads at the same time with --input-file or --parallel.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" c connections' -s 'c' -l 'connections' -d 'Connections per download.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" min-segment' -l 'min-segment' -d 'Smallest piece one connection is given or steals (e.g. 1M).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul"' -s 'H' -l 'header' -d 'Extra request header, \'Name: value\' (repeatable).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" u user' -s 'u' -l 'user' -d 'USER:PASSWORD for the server of the (first) URL, sent as Basic authorization to that origin only.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" netrc' -l 'netrc' -d 'Take the login and password for each URL\'s host from ~/.netrc.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" netrc-file' -l 'netrc-file' -d 'Like --netrc, from FILE.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" proxy x' -s 'x' -l 'proxy' -d 'Proxy for every URL: http://, https://, socks5:// or socks5h:// (names resolved by the proxy), with user:password@ for its credentials; "" for none. Without it, http_proxy, https_proxy/HTTPS_PROXY and all_proxy/ALL_PROXY are read as curl reads them.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" noproxy' -l 'noproxy' -d 'Hosts reached directly, not through the proxy: comma-separated domain suffixes, IP addresses, CIDR ranges, or * (default: no_proxy/NO_PROXY).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" user-agent' -l 'user-agent' -d 'User-Agent to send.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" cacert' -l 'cacert' -d 'CA certificates to trust, one PEM file.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" capath' -l 'capath' -d 'CA certificates to trust, a hashed directory (c_rehash).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" insecure k' -s 'k' -l 'insecure' -d 'Do not verify the server\'s TLS certificate.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" checksum' -l 'checksum' -d 'Expected digest of the file, ALGO=HEX (sha256, sha1, md5).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" limit-rate' -l 'limit-rate' -d 'Most bytes per second for each download (e.g. 500K, 10M; 0 for no limit).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" retries' -l 'retries' -d 'Retries per download for network failures and 408/429/5xx.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" connect-timeout' -l 'connect-timeout' -d 'Seconds allowed to connect (and for the TLS handshake).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" stall-timeout' -l 'stall-timeout' -d 'Seconds without receiving a byte before a connection is given up.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" Y speed-limit' -s 'Y' -l 'speed-limit' -d 'With --speed-time: bytes per second below which a connection is given up and its range retried (e.g. 10K).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" speed-time y' -s 'y' -l 'speed-time' -d 'Seconds a connection may stay below --speed-limit (default 30 when --speed-limit is given).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" max-time' -l 'max-time' -d 'Seconds one download may take in all.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" on-change' -l 'on-change' -d 'When the file changed on the server since the download began: fail or restart.' -rfka 'fail restart'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" restart' -l 'restart' -d 'Discard a previous partial download of the same output instead of resuming it.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" allow-overwrite' -l 'allow-overwrite' -d 'Replace an existing file at the destination.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" skip-existing' -l 'skip-existing' -d 'Skip a download whose file already exists, reporting it as complete (like wget -nc).'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" progress' -l 'progress' -d 'Progress on stderr: bar (plain lines when not a terminal), json, or none.' -rfka 'bar json none'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" q quiet' -s 'q' -l 'quiet' -d 'Print nothing but errors.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" no-sync' -l 'no-sync' -d 'Skip fdatasync (faster; survives a crash of haul, not of the machine).'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" checkpoint-bytes' -l 'checkpoint-bytes' -d 'Checkpoint the resume journal after this many bytes (e.g. 32M).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" checkpoint-interval' -l 'checkpoint-interval' -d 'Checkpoint the resume journal at least this often, in seconds.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" V version' -s 'V' -l 'version' -d 'Print the version and exit.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul" -eq 1' -fa 'help' -d 'Show subcommand help information.'
