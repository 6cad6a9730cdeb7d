/* gcc.exe for the Wine stage (.ci/wine): runs the Linux cross compiler
   x86_64-w64-mingw32-gcc for a Windows program under Wine. Built again as
   zig.exe (TARGET_COMPILER the Linux zig, TARGET_OPTIONS "-target",
   "x86_64-windows-gnu",) it stands in for the ziglang wheel's zig.exe, which
   Wine 8 cannot run: `python -m ziglang cc ...` then cross-compiles.

   A Windows process under Wine cannot start a Linux program with
   CreateProcess (it starts, but gets no process handle), so cubinrun's
   subprocess call needs a Windows executable: this one turns each Windows
   path among its arguments (C:\..., Z:\..., also after -I, -L and -o) into
   the Linux path Wine maps it to, and runs the compiler through Wine's
   __wine_unix_spawnvp and waits. The Linux child writes to Wine's own Unix
   streams, not to this process's handles (pipes that cubinrun reads), so its
   output goes through a file that is copied to this process's stderr.
   Wine-only: on real Windows it says so and exits 127. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#ifndef TARGET_COMPILER
#define TARGET_COMPILER "x86_64-w64-mingw32-gcc"
#endif
#ifndef TARGET_OPTIONS /* words after the arguments, each followed by a comma */
#define TARGET_OPTIONS
#endif

static char *trailing[] = {TARGET_OPTIONS NULL};

typedef char *(CDECL *to_unix_fn)(LPCWSTR);
typedef LONG (CDECL *spawn_fn)(char *const argv[], int wait);

static int is_windows_path(const wchar_t *s) {
  return ((s[0] >= L'A' && s[0] <= L'Z') || (s[0] >= L'a' && s[0] <= L'z')) && s[1] == L':' &&
         (s[2] == L'\\' || s[2] == L'/');
}

static char *utf8(const wchar_t *s) {
  int n = WideCharToMultiByte(CP_UTF8, 0, s, -1, NULL, 0, NULL, NULL);
  char *out = malloc(n);
  WideCharToMultiByte(CP_UTF8, 0, s, -1, out, n, NULL, NULL);
  return out;
}

int main(void) {
  to_unix_fn to_unix = (to_unix_fn)GetProcAddress(GetModuleHandleA("kernel32.dll"),
                                                  "wine_get_unix_file_name");
  spawn_fn spawn = (spawn_fn)GetProcAddress(GetModuleHandleA("ntdll.dll"),
                                            "__wine_unix_spawnvp");
  if (!to_unix || !spawn) {
    fprintf(stderr, "wine-gcc: not running under Wine\n");
    return 127;
  }
  wchar_t folder[MAX_PATH], log[MAX_PATH];
  GetTempPathW(MAX_PATH, folder);
  GetTempFileNameW(folder, L"wcc", 0, log);
  int argc;
  wchar_t **argv = CommandLineToArgvW(GetCommandLineW(), &argc);
  enum { SHELL_WORDS = 5 }; /* sh -c SCRIPT sh LOG */
  int extra = 0;
  while (trailing[extra])
    extra++;
  char **args = calloc(argc + SHELL_WORDS + extra + 1, sizeof(char *));
  args[0] = "/bin/sh";
  args[1] = "-c";
  args[2] = "log=$1; shift; exec \"$@\" >\"$log\" 2>&1";
  args[3] = "sh";
  args[4] = to_unix(log);
  args[SHELL_WORDS] = TARGET_COMPILER;
  for (int i = 1; i < argc; i++) {
    const wchar_t *a = argv[i];
    size_t prefix = (a[0] == L'-' && wcschr(L"ILo", a[1]) && a[1]) ? 2 : 0;
    char *unix_path = is_windows_path(a + prefix) ? to_unix(a + prefix) : NULL;
    if (unix_path) {
      char *arg = malloc(prefix + strlen(unix_path) + 1);
      memcpy(arg, "-I-L-o" + (a[1] == L'I' ? 0 : a[1] == L'L' ? 2 : 4), prefix);
      strcpy(arg + prefix, unix_path);
      args[SHELL_WORDS + i] = arg;
    } else {
      args[SHELL_WORDS + i] = utf8(a);
    }
  }
  for (int i = 0; i < extra; i++)
    args[SHELL_WORDS + argc + i] = trailing[i];
  LONG status = spawn(args, 1);
  HANDLE file = CreateFileW(log, GENERIC_READ, 0, NULL, OPEN_EXISTING, 0, NULL);
  char buffer[65536];
  DWORD got, put;
  while (file != INVALID_HANDLE_VALUE && ReadFile(file, buffer, sizeof buffer, &got, NULL) && got)
    WriteFile(GetStdHandle(STD_ERROR_HANDLE), buffer, got, &put, NULL);
  if (file != INVALID_HANDLE_VALUE) CloseHandle(file);
  DeleteFileW(log);
  return status == 0 ? 0 : 1;
}
