package ui

// prismLangs maps every language id that the old Rust pastebin's selector
// (mkaczanowski/pastebin, highlighted in the browser by Prism) offered to
// the canonical name of the closest chroma lexer, so that its users'
// scripts and bookmarks (?lang=markup, ?lang=clike) keep working. Ids that
// chroma knows under the same name map to that lexer; the others to the
// nearest relative: a dialect, the host language of a template or
// extension, or the syntax family. LookupLang consults chroma's own names
// first and this table second.
var prismLangs = map[string]string{
	"markup": "HTML", "css": "CSS", "clike": "C", "javascript": "JavaScript",
	"abap": "ABAP", "actionscript": "ActionScript", "ada": "Ada",
	"apacheconf": "ApacheConf", "apl": "APL", "applescript": "AppleScript",
	"arduino": "Arduino", "arff": "CSV", "asciidoc": "markdown",
	"asm6502": "NASM", "aspnet": "C#", "autohotkey": "AutoHotkey",
	"autoit": "AutoIt", "bash": "Bash", "basic": "QBasic", "batch": "Batchfile",
	"bison": "C", "brainfuck": "Brainfuck", "bro": "C", "c": "C",
	"csharp": "C#", "cpp": "C++", "coffeescript": "CoffeeScript",
	"clojure": "Clojure", "crystal": "Crystal", "csp": "HTTP",
	"css-extras": "CSS", "d": "D", "dart": "Dart", "diff": "Diff",
	"django": "Django/Jinja", "docker": "Docker", "eiffel": "Ada",
	"elixir": "Elixir", "elm": "Elm", "erb": "ERB", "erlang": "Erlang",
	"fsharp": "FSharp", "flow": "JavaScript", "fortran": "Fortran",
	"gedcom": "properties", "gherkin": "Gherkin", "git": "Diff",
	"glsl": "GLSL", "gml": "JavaScript", "go": "Go", "graphql": "GraphQL",
	"groovy": "Groovy", "haml": "Ruby", "handlebars": "Handlebars",
	"haskell": "Haskell", "haxe": "Haxe", "http": "HTTP", "hpkp": "HTTP",
	"hsts": "HTTP", "ichigojam": "QBasic", "icon": "C", "inform7": "markdown",
	"ini": "INI", "io": "Io", "j": "J", "java": "Java", "jolie": "Java",
	"json": "JSON", "julia": "Julia", "keyman": "C", "kotlin": "Kotlin",
	"latex": "TeX", "less": "SCSS", "liquid": "Django/Jinja", "lisp": "Common Lisp",
	"livescript": "CoffeeScript", "lolcode": "QBasic", "lua": "Lua",
	"makefile": "Makefile", "markdown": "markdown", "markup-templating": "HTML",
	"matlab": "Matlab", "mel": "Perl", "mizar": "Coq", "monkey": "BlitzBasic",
	"n4js": "TypeScript", "nasm": "NASM", "nginx": "Nginx configuration file",
	"nim": "Nim", "nix": "Nix", "nsis": "NSIS", "objectivec": "Objective-C",
	"ocaml": "OCaml", "opencl": "C", "oz": "Prolog", "parigp": "C",
	"parser": "HTML", "pascal": "ObjectPascal", "perl": "Perl", "php": "PHP",
	"php-extras": "PHP", "plsql": "PL/pgSQL", "powershell": "PowerShell",
	"processing": "Java", "prolog": "Prolog", "properties": "properties",
	"protobuf": "Protocol Buffer", "pug": "HTML", "puppet": "Puppet",
	"pure": "Haskell", "python": "Python", "q": "J", "qore": "Perl", "r": "R",
	"jsx": "react", "tsx": "TypeScript", "renpy": "Python", "reason": "ReasonML",
	"rest": "reStructuredText", "rip": "Ruby", "roboconf": "INI", "ruby": "Ruby",
	"rust": "Rust", "sas": "SAS", "sass": "Sass", "scss": "SCSS", "scala": "Scala",
	"scheme": "Scheme", "smalltalk": "Smalltalk", "smarty": "Smarty", "sql": "SQL",
	"soy": "Smarty", "stylus": "Stylus", "swift": "Swift", "tap": "YAML",
	"tcl": "Tcl", "textile": "markdown", "tt2": "Django/Jinja", "twig": "Twig",
	"typescript": "TypeScript", "vbnet": "VB.net", "velocity": "Django/Jinja",
	"verilog": "verilog", "vhdl": "VHDL", "vim": "VimL", "visual-basic": "VB.net",
	"wasm": "WebAssembly Text Format", "wiki": "markdown", "xeora": "HTML",
	"xojo": "VB.net", "xquery": "XML", "yaml": "YAML",
}
