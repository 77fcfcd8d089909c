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
        __haul_parse_subcommand -r 1 'o/output=' 'd/dir=' 'checksum=' 'on-change=' 'restart' 'allow-overwrite' 'N/timestamping' 'z/time-cond=' 'R/remote-time' 'no-sync' 'checkpoint-bytes=' 'checkpoint-interval=' 'c/connections=' 'min-segment=' 'limit-rate=' 'H/header=+' 'u/user=' 'netrc' 'netrc-file=' 'user-agent=' 'resolve=+' 'connect-to=+' '4/ipv4' '6/ipv6' 'interface=' 'cacert=' 'capath=' 'k/insecure' 'cert=' 'key=' 'retries=' 'connect-timeout=' 'stall-timeout=' 'Y/speed-limit=' 'y/speed-time=' 'max-time=' 'url-command=' 'url-command-timeout=' 'skip-existing' 'x/proxy=' 'noproxy=' 'progress=' 'q/quiet' 'v/verbose' 'i/input-file=' 'Z/parallel' 'j/jobs=' 'M/metalink=' 'follow-metalink' 'no-follow-metalink' 'V/version' 'w/write-out=' 'max-filesize=' 'r/range=' 'I/head' 'h/help'
        switch $unparsed_tokens[1]
        case 'daemon'
            __haul_parse_subcommand 0 'session=' 'state-dir=' 'j/jobs=' 'max-connections=' 'on-complete=' 'idle-exit=' 'detach' 'h/help'
        case 'queue'
            __haul_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'add'
                __haul_parse_subcommand -r 1 'session=' 'o/output=' 'd/dir=' 'checksum=' 'on-change=' 'restart' 'allow-overwrite' 'N/timestamping' 'z/time-cond=' 'R/remote-time' 'no-sync' 'checkpoint-bytes=' 'checkpoint-interval=' 'c/connections=' 'min-segment=' 'limit-rate=' 'H/header=+' 'u/user=' 'netrc' 'netrc-file=' 'user-agent=' 'resolve=+' 'connect-to=+' '4/ipv4' '6/ipv6' 'interface=' 'cacert=' 'capath=' 'k/insecure' 'cert=' 'key=' 'retries=' 'connect-timeout=' 'stall-timeout=' 'Y/speed-limit=' 'y/speed-time=' 'max-time=' 'url-command=' 'url-command-timeout=' 'on-complete=' 'json' 'h/help'
            case 'list'
                __haul_parse_subcommand 0 'session=' 'json' 'h/help'
            case 'pause'
                __haul_parse_subcommand -r 1 'session=' 'h/help'
            case 'resume'
                __haul_parse_subcommand -r 1 'session=' 'h/help'
            case 'cancel'
                __haul_parse_subcommand -r 1 'session=' 'h/help'
            case 'remove'
                __haul_parse_subcommand -r 1 'session=' 'ended' 'h/help'
            case 'wait'
                __haul_parse_subcommand -r 1 'session=' 'q/quiet' 'h/help'
            case 'events'
                __haul_parse_subcommand 0 'session=' 'after=' 'follow' 'json' 'h/help'
            case 'stop'
                __haul_parse_subcommand 0 'session=' 'h/help'
            end
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
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" o output' -s 'o' -l 'output' -d 'Write the file here; a directory (an existing one, or any path ending in /) saves into it under the server\'s or the URL\'s name; - streams it in order to standard output over all connections (not with queue add) (default: the server\'s suggested name in --dir).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" d dir' -s 'd' -l 'dir' -d 'Directory for downloaded files; created when missing (default: current).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" checksum' -l 'checksum' -d 'Expected digest of the file, ALGO=HEX (sha256, sha512, sha1, md5; aria2\'s sha-256=HEX too).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" on-change' -l 'on-change' -d 'When the file changed on the server since the download began: fail or restart.' -rfka 'fail restart'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" restart' -l 'restart' -d 'Discard a previous partial download of the same output instead of resuming it.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" allow-overwrite' -l 'allow-overwrite' -d 'Replace an existing file at the destination.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" N timestamping' -s 'N' -l 'timestamping' -d 'Fetch only if the server\'s file changed: an existing file is asked about with its stored ETag and Last-Modified (If-None-Match, If-Modified-Since) and kept on a 304, replaced otherwise; the file is named from the URL (like wget -N).'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" time-cond z' -s 'z' -l 'time-cond' -d 'curl\'s -z: fetch only if modified after DATE (an HTTP date: \'Wed, 01 Sep 2021 12:00:00 GMT\', RFC 850 or asctime) or after FILE\'s time; the output file itself (-o) works as -N. A 304 is \'up to date\' (exit 0). A leading - (if unmodified since) is refused.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" R remote-time' -s 'R' -l 'remote-time' -d 'Give the file the server\'s Last-Modified time.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" no-sync' -l 'no-sync' -d 'Skip fdatasync (faster; survives a crash of haul or its daemon, not of the machine).'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" checkpoint-bytes' -l 'checkpoint-bytes' -d 'Checkpoint the resume journal after this many bytes (e.g. 32M).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" checkpoint-interval' -l 'checkpoint-interval' -d 'Checkpoint the resume journal at least this often, in seconds.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" c connections' -s 'c' -l 'connections' -d 'Connections per download (1 to 64).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" min-segment' -l 'min-segment' -d 'Smallest piece one connection is given or steals (e.g. 1M).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" limit-rate' -l 'limit-rate' -d 'Most bytes per second for each download (e.g. 500K, 10M; 0 for no limit).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul"' -s 'H' -l 'header' -d 'Extra request header, \'Name: value\' (repeatable).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" u user' -s 'u' -l 'user' -d 'USER:PASSWORD for the server of the (first) URL, sent as Basic authorization to that origin only; USER alone asks for the password on a terminal.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" netrc' -l 'netrc' -d 'Take the login and password for each URL\'s host from ~/.netrc.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" netrc-file' -l 'netrc-file' -d 'Like --netrc, from FILE.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" user-agent' -l 'user-agent' -d 'User-Agent to send.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul"' -l 'resolve' -d 'Connect to ADDRESS for HOST:PORT instead of looking HOST up (HOST * for any; repeatable); TLS and Host still use HOST, as curl\'s --resolve.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul"' -l 'connect-to' -d 'For requests to HOST1:PORT1 connect to HOST2:PORT2 instead (an empty field: any, or the same; repeatable, the first match is used); TLS and Host still use HOST1, as curl\'s --connect-to.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" 4 ipv4' -s '4' -l 'ipv4' -d 'Resolve and connect over IPv4 only.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" 6 ipv6' -s '6' -l 'ipv6' -d 'Resolve and connect over IPv6 only.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" interface' -l 'interface' -d 'Connect from this network interface (a device name such as eth0) or this local IP address.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" cacert' -l 'cacert' -d 'CA certificates to trust, one PEM file.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" capath' -l 'capath' -d 'CA certificates to trust, a hashed directory (c_rehash).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" insecure k' -s 'k' -l 'insecure' -d 'Do not verify the server\'s TLS certificate.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" cert' -l 'cert' -d 'Client certificate to present to servers that ask for one: a PEM file (with the key too, unless --key is given).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" key' -l 'key' -d 'Private key of --cert: an unencrypted PEM file.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" retries' -l 'retries' -d 'Retries for the whole download (network failures, 408/429/5xx); with one URL a single range may use them all, with mirrors a range moves to the next mirror after 5 tries in a row on one. Default: 5 tries in a row for a range, 100 retries in all. A Retry-After of up to 60 s is waited for; a longer one fails that try at once, like any failed try.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" connect-timeout' -l 'connect-timeout' -d 'Seconds allowed to connect (and for the TLS handshake).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" stall-timeout' -l 'stall-timeout' -d 'Seconds without receiving a byte before a connection is given up.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" Y speed-limit' -s 'Y' -l 'speed-limit' -d 'Bytes per second a connection must average over --speed-time, else it is closed and its range retried like any failed try (default 100; 0 turns the limit off).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" speed-time y' -s 'y' -l 'speed-time' -d 'Seconds over which --speed-limit is averaged (default 60; 0 turns the limit off).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" max-time' -l 'max-time' -d 'Seconds one download may take in all (a queued one: each time the daemon runs it).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" url-command' -l 'url-command' -d 'When a URL answers 401, 403, 404 or 410 after the download has begun (a signed link that expired), run this shell command (/bin/sh -c, with HAUL_URL, HAUL_STATUS and HAUL_ERROR set) and continue at the URL on the first line of its output, only if the server shows the same file there (strong ETag or Last-Modified, and length; otherwise --on-change decides). At most 5 per download. A command that fails, prints nothing or times out gives up: the download fails with the original error.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" url-command-timeout' -l 'url-command-timeout' -d 'Seconds --url-command may run before it is killed with what it started (default 30).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" skip-existing' -l 'skip-existing' -d 'Skip a download whose file already exists, reporting it as complete (like wget -nc).'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" proxy x' -s 'x' -l 'proxy' -d 'Proxy for every URL: http://, https://, socks5:// or socks5h:// (names resolved by the proxy), with user:password@ for its credentials; "" for none. Without it, http_proxy, https_proxy/HTTPS_PROXY and all_proxy/ALL_PROXY are read as curl reads them.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" noproxy' -l 'noproxy' -d 'Hosts reached directly, not through the proxy: comma-separated domain suffixes, IP addresses, CIDR ranges, or * (default: no_proxy/NO_PROXY).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" progress' -l 'progress' -d 'Progress on stderr: bar (plain lines when not a terminal), json, or none.' -rfka 'bar json none'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" q quiet' -s 'q' -l 'quiet' -d 'Print nothing but errors.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" v verbose' -s 'v' -l 'verbose' -d 'Log every request (with its Range), response, redirect, retry and resume decision to stderr.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" i input-file' -s 'i' -l 'input-file' -d 'Download every URL listed in FILE (URL, TAB mirrors, TAB out=NAME); - reads the list from standard input.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" Z parallel' -s 'Z' -l 'parallel' -d 'Download each URL on the command line as its own file (not as mirrors), --jobs at a time.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" j jobs' -s 'j' -l 'jobs' -d 'Downloads at the same time with --input-file or --parallel.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" M metalink' -s 'M' -l 'metalink' -d 'Download every file of a Metalink v4 document (.meta4, RFC 5854) into --dir under its Metalink name, from its mirrors in priority order, verifying its strongest hash; FILE may be an http(s) URL.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" follow-metalink' -l 'follow-metalink' -d 'A URL answered with a Metalink v4 document (Content-Type application/metalink4+xml) downloads the files it lists, into --dir, as -M would (default); --no-follow-metalink saves the document itself.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" no-follow-metalink' -l 'no-follow-metalink' -d 'A URL answered with a Metalink v4 document (Content-Type application/metalink4+xml) downloads the files it lists, into --dir, as -M would (default); --no-follow-metalink saves the document itself.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" V version' -s 'V' -l 'version' -d 'Print the version and exit.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" w write-out' -s 'w' -l 'write-out' -d 'After each download, print FORMAT on standard output, as curl\'s -w: %{http_code}, %{size_download}, %{speed_download}, %{time_total}, %{url_effective}, %{url}, %{filename_effective}, %{content_type}, %{num_redirects}, %{exitcode}, %{errormsg}, %{json}; %% is %, \\n a newline; @FILE reads FORMAT from FILE (@- from standard input).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" max-filesize' -l 'max-filesize' -d 'Refuse a file larger than SIZE (e.g. 100M) before writing a byte of it; one that announces no length is stopped once it grows past SIZE. Nothing is kept; exit 63, as curl.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" r range' -s 'r' -l 'range' -d 'Fetch only these bytes of the file, as curl\'s -r: A-B, A- or -N (the last N); the output starts with byte A. One request over one connection, no resume; a server that does not answer with exactly that range (206) fails it.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" I head' -s 'I' -l 'head' -d 'Send HEAD and print the response head (status line and fields) on standard output, one per redirect, as curl -I -L; nothing is written.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul" -eq 1' -fa 'daemon' -d 'Run a session\'s daemon (the owner of its queue) in the foreground.'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul" -eq 1' -fa 'queue' -d 'Hand downloads to a session\'s daemon and follow them (see docs/sessions.md).'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul daemon" session' -l 'session' -d 'The session (its state is in $HAUL_STATE_DIR/sessions/ID).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul daemon" state-dir' -l 'state-dir' -d 'The state directory (default: $HAUL_STATE_DIR, $XDG_STATE_HOME/haul, ~/.local/state/haul).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul daemon" j jobs' -s 'j' -l 'jobs' -d 'Downloads running at once (stored in the session; default 4).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul daemon" max-connections' -l 'max-connections' -d 'Connections all downloads may have open at once (stored; default 64).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul daemon" on-complete' -l 'on-complete' -d 'Run this shell command once for each completed task without a hook of its own (stored; \'\' removes it).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul daemon" idle-exit' -l 'idle-exit' -d 'Exit after this many seconds with nothing to do and no client (default: never; 60 with --detach).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul daemon" detach' -l 'detach' -d 'Start the daemon in the background (output to the session\'s daemon.log) and return at once.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul daemon" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul queue" -eq 1' -fa 'add' -d 'Queue a download; print its task id and return at once.'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul queue" -eq 1' -fa 'list' -d 'One line per task: id, state, bytes, path (a JSON object each with --json).'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul queue" -eq 1' -fa 'pause' -d 'Pause tasks (their journals are written first).'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul queue" -eq 1' -fa 'resume' -d 'Queue paused or failed tasks again.'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul queue" -eq 1' -fa 'cancel' -d 'Cancel tasks and remove their partial files.'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul queue" -eq 1' -fa 'remove' -d 'Remove ended tasks (completed, failed, cancelled) from the list; their files stay, their events stay in the log.'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul queue" -eq 1' -fa 'wait' -d 'Wait until tasks (default: every one not yet ended) have ended; exit as a download would (0 when all completed).'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul queue" -eq 1' -fa 'events' -d 'Print the session\'s event log: added, started, paused, resumed, completed, failed, cancelled, hook.'
complete -c 'haul' -n '__haul_should_offer_completions_for_positional "haul queue" -eq 1' -fa 'stop' -d 'Stop the session\'s daemon cleanly (every running download checkpointed); tasks continue with the next daemon.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" session' -l 'session' -d 'The session (its state is in $HAUL_STATE_DIR/sessions/ID).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" o output' -s 'o' -l 'output' -d 'Write the file here; a directory (an existing one, or any path ending in /) saves into it under the server\'s or the URL\'s name; - streams it in order to standard output over all connections (not with queue add) (default: the server\'s suggested name in --dir).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" d dir' -s 'd' -l 'dir' -d 'Directory for downloaded files; created when missing (default: current).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" checksum' -l 'checksum' -d 'Expected digest of the file, ALGO=HEX (sha256, sha512, sha1, md5; aria2\'s sha-256=HEX too).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" on-change' -l 'on-change' -d 'When the file changed on the server since the download began: fail or restart.' -rfka 'fail restart'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" restart' -l 'restart' -d 'Discard a previous partial download of the same output instead of resuming it.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" allow-overwrite' -l 'allow-overwrite' -d 'Replace an existing file at the destination.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" N timestamping' -s 'N' -l 'timestamping' -d 'Fetch only if the server\'s file changed: an existing file is asked about with its stored ETag and Last-Modified (If-None-Match, If-Modified-Since) and kept on a 304, replaced otherwise; the file is named from the URL (like wget -N).'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" time-cond z' -s 'z' -l 'time-cond' -d 'curl\'s -z: fetch only if modified after DATE (an HTTP date: \'Wed, 01 Sep 2021 12:00:00 GMT\', RFC 850 or asctime) or after FILE\'s time; the output file itself (-o) works as -N. A 304 is \'up to date\' (exit 0). A leading - (if unmodified since) is refused.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" R remote-time' -s 'R' -l 'remote-time' -d 'Give the file the server\'s Last-Modified time.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" no-sync' -l 'no-sync' -d 'Skip fdatasync (faster; survives a crash of haul or its daemon, not of the machine).'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" checkpoint-bytes' -l 'checkpoint-bytes' -d 'Checkpoint the resume journal after this many bytes (e.g. 32M).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" checkpoint-interval' -l 'checkpoint-interval' -d 'Checkpoint the resume journal at least this often, in seconds.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" c connections' -s 'c' -l 'connections' -d 'Connections per download (1 to 64).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" min-segment' -l 'min-segment' -d 'Smallest piece one connection is given or steals (e.g. 1M).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" limit-rate' -l 'limit-rate' -d 'Most bytes per second for each download (e.g. 500K, 10M; 0 for no limit).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add"' -s 'H' -l 'header' -d 'Extra request header, \'Name: value\' (repeatable).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" u user' -s 'u' -l 'user' -d 'USER:PASSWORD for the server of the (first) URL, sent as Basic authorization to that origin only; USER alone asks for the password on a terminal.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" netrc' -l 'netrc' -d 'Take the login and password for each URL\'s host from ~/.netrc.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" netrc-file' -l 'netrc-file' -d 'Like --netrc, from FILE.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" user-agent' -l 'user-agent' -d 'User-Agent to send.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add"' -l 'resolve' -d 'Connect to ADDRESS for HOST:PORT instead of looking HOST up (HOST * for any; repeatable); TLS and Host still use HOST, as curl\'s --resolve.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add"' -l 'connect-to' -d 'For requests to HOST1:PORT1 connect to HOST2:PORT2 instead (an empty field: any, or the same; repeatable, the first match is used); TLS and Host still use HOST1, as curl\'s --connect-to.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" 4 ipv4' -s '4' -l 'ipv4' -d 'Resolve and connect over IPv4 only.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" 6 ipv6' -s '6' -l 'ipv6' -d 'Resolve and connect over IPv6 only.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" interface' -l 'interface' -d 'Connect from this network interface (a device name such as eth0) or this local IP address.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" cacert' -l 'cacert' -d 'CA certificates to trust, one PEM file.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" capath' -l 'capath' -d 'CA certificates to trust, a hashed directory (c_rehash).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" insecure k' -s 'k' -l 'insecure' -d 'Do not verify the server\'s TLS certificate.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" cert' -l 'cert' -d 'Client certificate to present to servers that ask for one: a PEM file (with the key too, unless --key is given).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" key' -l 'key' -d 'Private key of --cert: an unencrypted PEM file.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" retries' -l 'retries' -d 'Retries for the whole download (network failures, 408/429/5xx); with one URL a single range may use them all, with mirrors a range moves to the next mirror after 5 tries in a row on one. Default: 5 tries in a row for a range, 100 retries in all. A Retry-After of up to 60 s is waited for; a longer one fails that try at once, like any failed try.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" connect-timeout' -l 'connect-timeout' -d 'Seconds allowed to connect (and for the TLS handshake).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" stall-timeout' -l 'stall-timeout' -d 'Seconds without receiving a byte before a connection is given up.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" Y speed-limit' -s 'Y' -l 'speed-limit' -d 'Bytes per second a connection must average over --speed-time, else it is closed and its range retried like any failed try (default 100; 0 turns the limit off).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" speed-time y' -s 'y' -l 'speed-time' -d 'Seconds over which --speed-limit is averaged (default 60; 0 turns the limit off).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" max-time' -l 'max-time' -d 'Seconds one download may take in all (a queued one: each time the daemon runs it).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" url-command' -l 'url-command' -d 'When a URL answers 401, 403, 404 or 410 after the download has begun (a signed link that expired), run this shell command (/bin/sh -c, with HAUL_URL, HAUL_STATUS and HAUL_ERROR set) and continue at the URL on the first line of its output, only if the server shows the same file there (strong ETag or Last-Modified, and length; otherwise --on-change decides). At most 5 per download. A command that fails, prints nothing or times out gives up: the download fails with the original error.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" url-command-timeout' -l 'url-command-timeout' -d 'Seconds --url-command may run before it is killed with what it started (default 30).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" on-complete' -l 'on-complete' -d 'Run this shell command once when the download completes (HAUL_PATH, HAUL_DIGEST, ... in its environment).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" json' -l 'json' -d 'Print the task as a JSON object instead of its id.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue add" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue list" session' -l 'session' -d 'The session (its state is in $HAUL_STATE_DIR/sessions/ID).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue list" json' -l 'json' -d 'One JSON object per line: id, state, url, path, bytes, total, and error when failed.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue pause" session' -l 'session' -d 'The session (its state is in $HAUL_STATE_DIR/sessions/ID).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue pause" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue resume" session' -l 'session' -d 'The session (its state is in $HAUL_STATE_DIR/sessions/ID).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue resume" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue cancel" session' -l 'session' -d 'The session (its state is in $HAUL_STATE_DIR/sessions/ID).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue cancel" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue remove" session' -l 'session' -d 'The session (its state is in $HAUL_STATE_DIR/sessions/ID).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue remove" ended' -l 'ended' -d 'Remove every ended task.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue remove" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue wait" session' -l 'session' -d 'The session (its state is in $HAUL_STATE_DIR/sessions/ID).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue wait" q quiet' -s 'q' -l 'quiet' -d 'Print nothing but errors.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue wait" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue events" session' -l 'session' -d 'The session (its state is in $HAUL_STATE_DIR/sessions/ID).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue events" after' -l 'after' -d 'Only events after this sequence number.' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue events" follow' -l 'follow' -d 'Keep printing new events as they happen.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue events" json' -l 'json' -d 'One JSON object per line.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue events" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue stop" session' -l 'session' -d 'The session (its state is in $HAUL_STATE_DIR/sessions/ID).' -rfka ''
complete -c 'haul' -n '__haul_should_offer_completions_for_flags_or_options "haul queue stop" h help' -s 'h' -l 'help' -d 'Show help information.'
