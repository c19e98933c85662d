"""The `completion` subcommand: bash, zsh and fish completion scripts made from the parser."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, field

from memory_console.commands import common

PROG = "memory-console"
SHELLS = ("bash", "zsh", "fish")
# Options and positionals whose value is a file name (the shell completes files for them).
FILE_DESTS = frozenset({"db", "out", "file", "plan", "model_manifest"})


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    completion = subparsers.add_parser(
        "completion",
        description="Print a script that completes memory-console's commands, options and "
        "their choices in SHELL. Load it from the shell's start-up file, or save it where "
        "the shell looks for completions.",
        epilog=common.examples(
            "completion bash > ~/.local/share/bash-completion/completions/memory-console",
            "completion fish > ~/.config/fish/completions/memory-console.fish",
        ),
    )
    completion.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    common.add_verbosity(completion)
    completion.set_defaults(handler=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    from memory_console.cli import build_parser

    tree = command_tree(build_parser())
    script = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[args.shell](tree)
    print(script, end="")
    return 0


# -- the parser as a tree ------------------------------------------------------------------


@dataclass
class Option:
    flags: list[str]
    help: str
    takes_value: bool
    choices: list[str] | None
    is_file: bool


@dataclass
class Command:
    path: str  # "" for the program, "config set" for a nested one
    help: str = ""
    options: list[Option] = field(default_factory=list)
    subcommands: dict[str, Command] = field(default_factory=dict)
    positional_choices: list[str] = field(default_factory=list)
    positional_files: bool = False


def command_tree(parser: argparse.ArgumentParser, path: str = "", help_text: str = "") -> Command:
    """Every option, choice and subcommand of `parser`, walked recursively."""
    command = Command(path, help_text)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                sub_path = f"{path} {name}".strip()
                command.subcommands[name] = command_tree(sub, sub_path, helps.get(name, ""))
        elif action.help == argparse.SUPPRESS:
            continue
        elif action.option_strings:
            command.options.append(
                Option(
                    flags=list(action.option_strings),
                    help=action.help if isinstance(action.help, str) else "",
                    takes_value=action.nargs != 0,
                    choices=[str(c) for c in action.choices] if action.choices else None,
                    is_file=action.dest in FILE_DESTS,
                )
            )
        elif action.choices:
            command.positional_choices += [str(c) for c in action.choices]
        elif action.dest in FILE_DESTS:
            command.positional_files = True
    return command


def walk(command: Command) -> list[Command]:
    found = [command]
    for sub in command.subcommands.values():
        found += walk(sub)
    return found


# -- bash (and zsh through bashcompinit) -------------------------------------------------------


def case_arm(patterns: list[str], body: str) -> str:
    return f"        {'|'.join(shlex.quote(p) for p in patterns)}) {body} ;;"


def bash_script(tree: Command) -> str:
    """A bash completion function over case tables (no associative arrays: bash 3.2 works)."""
    commands = walk(tree)
    words, options, valued, choices, files = [], [], [], [], []
    for command in commands:
        listed = [*command.subcommands, *command.positional_choices]
        if listed:
            words.append(case_arm([command.path], f"echo {shlex.quote(' '.join(listed))}"))
        elif command.positional_files:
            words.append(case_arm([command.path], "echo __files__"))
        flags = [flag for option in command.options for flag in option.flags]
        options.append(case_arm([command.path], f"echo {shlex.quote(' '.join(flags))}"))
        for option in command.options:
            if not option.takes_value:
                continue
            keys = [f"{command.path}|{flag}" for flag in option.flags]
            valued += keys
            if option.choices:
                choices.append(case_arm(keys, f"echo {shlex.quote(' '.join(option.choices))}"))
            elif option.is_file:
                files += keys
    if files:
        choices.append(case_arm(files, "echo __files__"))
    valued_arm = case_arm(valued, "return 0")
    name = "_memory_console"
    return f"""# {PROG} completion for bash (zsh: `{PROG} completion zsh`).
# Load it with: source <({PROG} completion bash)

{name}_words() {{
    case "$1" in
{chr(10).join(words)}
    esac
}}

{name}_options() {{
    case "$1" in
{chr(10).join(options)}
    esac
}}

{name}_takes_value() {{
    case "$1|$2" in
{valued_arm}
    esac
    return 1
}}

{name}_values() {{
    case "$1|$2" in
{chr(10).join(choices)}
    esac
}}

{name}_reply() {{
    # $1: the words to offer (__files__: file names), $2: the word being completed
    if [[ "$1" == __files__ ]]; then
        COMPREPLY=($(compgen -f -- "$2"))
    elif [[ -n "$1" ]]; then
        COMPREPLY=($(compgen -W "$1" -- "$2"))
    else
        COMPREPLY=()
    fi
}}

{name}() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" cmdpath="" word subs i skip=0
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        if ((skip)); then
            skip=0
            continue
        fi
        case "$word" in
            --*=*) ;;
            -*) {name}_takes_value "$cmdpath" "$word" && skip=1 ;;
            *)
                subs=" $({name}_words "$cmdpath") "
                if [[ "$subs" == *" $word "* && "$subs" != " __files__ " ]]; then
                    cmdpath="${{cmdpath:+$cmdpath }}$word"
                fi
                ;;
        esac
    done
    if ((skip)); then
        {name}_reply "$({name}_values "$cmdpath" "${{COMP_WORDS[COMP_CWORD - 1]}}")" "$cur"
    elif [[ "$cur" == -* ]]; then
        {name}_reply "$({name}_options "$cmdpath")" "$cur"
    else
        {name}_reply "$({name}_words "$cmdpath")" "$cur"
    fi
}}

complete -o filenames -F {name} {PROG}
"""


def zsh_script(tree: Command) -> str:
    """The bash function, loaded through zsh's bashcompinit."""
    return (
        f"#compdef {PROG}\n# {PROG} completion for zsh.\n"
        f"# Load it with: source <({PROG} completion zsh)\n\n"
        "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit }\n"
        "autoload -U +X bashcompinit && bashcompinit\n\n" + bash_script(tree)
    )


# -- fish ----------------------------------------------------------------------------------


def fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_condition(command: Command, tree: Command) -> str:
    """The fish condition under which `command`'s own words are completed."""
    if not command.path:
        return "__fish_use_subcommand"
    parts = command.path.split()
    tests = [f"__fish_seen_subcommand_from {part}" for part in parts]
    if command.subcommands:
        tests.append(f"not __fish_seen_subcommand_from {' '.join(command.subcommands)}")
    return "; and ".join(tests)


def fish_script(tree: Command) -> str:
    lines = [
        f"# {PROG} completion for fish.",
        f"# Save it as ~/.config/fish/completions/{PROG}.fish, or: {PROG} completion fish | source",
        f"complete -c {PROG} -f",
    ]
    for command in walk(tree):
        condition = f"-n {fish_quote(fish_condition(command, tree))}"
        for name, sub in command.subcommands.items():
            lines.append(
                f"complete -c {PROG} {condition} -a {fish_quote(name)} -d {fish_quote(sub.help)}"
            )
        if command.positional_choices:
            words = " ".join(command.positional_choices)
            lines.append(f"complete -c {PROG} {condition} -a {fish_quote(words)}")
        if command.positional_files:
            lines.append(f"complete -c {PROG} {condition} -F")
        for option in command.options:
            spec = []
            for flag in option.flags:
                if flag.startswith("--"):
                    spec.append(f"-l {flag[2:]}")
                else:
                    spec.append(f"-s {flag[1:]}")
            if option.choices:
                spec.append(f"-x -a {fish_quote(' '.join(option.choices))}")
            elif option.is_file:
                spec.append("-r -F")
            elif option.takes_value:
                spec.append("-x")
            help_text = option.help.split("\n")[0]
            lines.append(
                f"complete -c {PROG} {condition} {' '.join(spec)} -d {fish_quote(help_text)}"
            )
    return "\n".join(lines) + "\n"
