# filebench FILESERVER personality as the ZRAID paper ran it (ASPLOS '25,
# §6.4, Fig. 9), for `zns repro zraid --fig 9 --filebench PATH`
# (docs/apps.md, "The papers' own programs"). Written for znskit from the
# personality's published parameters (50 threads; files of mean 128 KiB in
# directories of 20; per loop: create and write a file whole, append a mean
# 16 KiB to a random file, read a random file whole, delete one, stat one;
# 80 % of the files preallocated; 60 s), with the paper's changes: iosize
# swept 4 KiB .. 1 MiB and direct I/O. Files have the mean size (no gamma
# distribution: that needs filebench's cvar libraries installed).
# zns substitutes /tmp/zns-apps-mnt-192 (the mount point), 10000 (files in all),
# 4k, 8 (seconds) and ,directio (",directio" or nothing).
set $dir=/tmp/zns-apps-mnt-192
set $nfiles=10000
set $iosize=4k

define fileset name=bigfileset,path=$dir,size=128k,entries=$nfiles,dirwidth=20,prealloc=80

define process name=filereader,instances=1
{
  thread name=filereaderthread,memsize=10m,instances=50
  {
    flowop createfile name=createfile1,filesetname=bigfileset,fd=1
    flowop writewholefile name=wrtfile1,srcfd=1,fd=1,iosize=$iosize,directio
    flowop closefile name=closefile1,fd=1
    flowop openfile name=openfile1,filesetname=bigfileset,fd=1
    flowop appendfilerand name=appendfilerand1,iosize=16k,fd=1,directio
    flowop closefile name=closefile2,fd=1
    flowop openfile name=openfile2,filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile1,fd=1,iosize=$iosize,directio
    flowop closefile name=closefile3,fd=1
    flowop deletefile name=deletefile1,filesetname=bigfileset
    flowop statfile name=statfile1,filesetname=bigfileset
  }
}

run 8
