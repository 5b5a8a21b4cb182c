# filebench OLTP personality (a database: one log writer, ten database
# writers, 200 readers, paced by the readers) for `zns repro zraid --fig 9
# --filebench PATH` (docs/apps.md, "The papers' own programs"). Written for
# znskit from the personality's published parameters (10 data files and a
# log file of 10 MiB, preallocated; the log writer writes 256 KiB with
# O_DSYNC; each database writer writes iosize at random with O_DSYNC, 100
# calls a file; each reader reads iosize at random; semaphores let the
# writers go as the readers post), with the paper's changes: iosize 4 KiB
# (2 KiB by default; the direct-I/O restriction) and direct I/O. The
# personality's asynchronous writes (aiowrite/aiowait) are synchronous
# writes here, which any filebench build has. zns substitutes @DIR@,
# @IOSIZE@, @RUNTIME@ (seconds) and @DIRECTIO@ (",directio" or nothing).
set $dir=@DIR@
set $iosize=@IOSIZE@

define fileset name=logfile,path=$dir,size=10m,entries=1,dirwidth=1024,prealloc=100,reuse
define fileset name=datafiles,path=$dir,size=10m,entries=10,dirwidth=1024,prealloc=100,reuse

define process name=lgwr,instances=1
{
  thread name=lgwr,memsize=1m
  {
    flowop write name=lg-write,filesetname=logfile,iosize=256k,random,dsync@DIRECTIO@
    flowop semblock name=lg-block,value=3200,highwater=1000
  }
}

define process name=dbwr,instances=10
{
  thread name=dbwr,memsize=1m
  {
    flowop write name=dbwrite-a,filesetname=datafiles,iosize=$iosize,workingset=10m,random,iters=100,opennext,dsync@DIRECTIO@
    flowop semblock name=dbwr-block,value=1000,highwater=2000
  }
}

define process name=shadow,instances=200
{
  thread name=shadow,memsize=1m
  {
    flowop read name=shadowread,filesetname=datafiles,iosize=$iosize,workingset=10m,random,opennext@DIRECTIO@
    flowop sempost name=shadow-post-lg,value=1,target=lg-block,blocking
    flowop sempost name=shadow-post-dbwr,value=1,target=dbwr-block,blocking
  }
}

run @RUNTIME@
