# filebench VARMAIL personality (a mail server: small files, fsync-heavy)
# for `zns repro zraid --fig 9 --filebench PATH` (docs/apps.md, "The
# papers' own programs"). Written for znskit from the personality's
# published parameters (16 threads; files of 16 KiB in one directory; per
# loop: delete a file, create one and append 16 KiB and fsync, read a file
# whole and append 16 KiB and fsync, read a file whole; 80 % preallocated);
# buffered I/O, as the paper ran VARMAIL. zns substitutes @DIR@, @NFILES@,
# @RUNTIME@ (seconds) and @DIRECTIO@ (nothing for this personality).
set $dir=@DIR@
set $nfiles=@NFILES@

define fileset name=bigfileset,path=$dir,size=16k,entries=$nfiles,dirwidth=1000000,prealloc=80

define process name=filereader,instances=1
{
  thread name=filereaderthread,memsize=10m,instances=16
  {
    flowop deletefile name=deletefile1,filesetname=bigfileset
    flowop createfile name=createfile2,filesetname=bigfileset,fd=1
    flowop appendfilerand name=appendfilerand2,iosize=16k,fd=1@DIRECTIO@
    flowop fsync name=fsyncfile2,fd=1
    flowop closefile name=closefile2,fd=1
    flowop openfile name=openfile3,filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile3,fd=1,iosize=1m@DIRECTIO@
    flowop appendfilerand name=appendfilerand3,iosize=16k,fd=1@DIRECTIO@
    flowop fsync name=fsyncfile3,fd=1
    flowop closefile name=closefile3,fd=1
    flowop openfile name=openfile4,filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile4,fd=1,iosize=1m@DIRECTIO@
    flowop closefile name=closefile4,fd=1
  }
}

run @RUNTIME@
