; Roundhouse's Windows installer (Inno Setup 6): a per-user install, no administrator rights.
; installers/build.py compiles it on Windows with the values below defined on the command line:
;   iscc /DAppVersion=0.1.0 /DSourceDir=<PyInstaller's one folder> /DOutputDir=dist
;        /DIconFile=<roundhouse.ico> /DArch=x86_64 installers\windows\roundhouse.iss
; The folder holds roundhouse.exe (console: the CLI and the daemon) and roundhousew.exe
; (windowed: the app, what the Start menu and the login entry open, no console window).

#ifndef AppVersion
  #error Define AppVersion, SourceDir, OutputDir, IconFile and Arch: run installers\build.py
#endif

[Setup]
; The AppId ties upgrades and the uninstaller together: never change it.
AppId={{36DAB4FD-C8CE-4E52-B1B1-D79D485357AE}
AppName=Roundhouse
AppVersion={#AppVersion}
AppVerName=Roundhouse {#AppVersion}
AppPublisher=Roundhouse
VersionInfoVersion={#AppVersion}
; Per user: %LOCALAPPDATA%\Programs\Roundhouse, the user's Start menu, HKCU only.
PrivilegesRequired=lowest
DefaultDirName={autopf}\Roundhouse
DefaultGroupName=Roundhouse
DisableProgramGroupPage=yes
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#OutputDir}
OutputBaseFilename=Roundhouse-{#AppVersion}-windows-{#Arch}-setup
SetupIconFile={#IconFile}
UninstallDisplayIcon={app}\roundhousew.exe
UninstallDisplayName=Roundhouse
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
; Close a running app (Restart Manager) before replacing its files.
CloseApplications=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\Roundhouse"; Filename: "{app}\roundhousew.exe"; WorkingDir: "{app}"
Name: "{autodesktop}\Roundhouse"; Filename: "{app}\roundhousew.exe"; WorkingDir: "{app}"; Tasks: desktopicon

[Run]
Filename: "{app}\roundhousew.exe"; Description: "{cm:LaunchProgram,Roundhouse}"; Flags: nowait postinstall skipifsilent

[UninstallRun]
; First stop the daemon of the default home (and the engines it supervises): it runs the
; files about to be removed. Nothing running is not an error.
Filename: "{app}\roundhouse.exe"; Parameters: "stop"; Flags: runhidden waituntilterminated; RunOnceId: "StopDaemon"

[Code]
const
  RunKey = 'Software\Microsoft\Windows\CurrentVersion\Run';
  RunValue = 'Roundhouse';

{ An upgrade replaces files the running daemon holds open: stop it first, as the uninstaller does. }
function PrepareToInstall(var NeedsRestart: Boolean): String;
var
  ResultCode: Integer;
begin
  if FileExists(ExpandConstant('{app}\roundhouse.exe')) then
    Exec(ExpandConstant('{app}\roundhouse.exe'), 'stop', '', SW_HIDE, ewWaitUntilTerminated, ResultCode);
  Result := '';
end;

{ Start at login is the HKCU Run value the app writes (core/autostart.py): remove it with the app. }
procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
begin
  if (CurUninstallStep = usUninstall) and RegValueExists(HKCU, RunKey, RunValue) then
    RegDeleteValue(HKCU, RunKey, RunValue);
end;
