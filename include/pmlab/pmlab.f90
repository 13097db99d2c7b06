! pmlab's Fortran binding: ISO_C_BINDING interfaces to pmlab/pmlab.h (a loop over regions
! protected by Lazy Persistency). Compile this file with your program; examples/fortran-heat does.
module pmlab
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! Statuses (pmlab.h's enum pmlab_status).
  integer(c_int), parameter, public :: PMLAB_OK = 0, PMLAB_E_INVALID = 1, PMLAB_E_CORRUPT = 2, &
    PMLAB_E_VERSION = 3, PMLAB_E_MISMATCH = 4, PMLAB_E_BUSY = 5, PMLAB_E_IO = 6, &
    PMLAB_E_UNSUPPORTED = 7, PMLAB_E_CALLBACK = 8, PMLAB_E_INTERNAL = 9

  ! What pmlab_loop_run did (pmlab.h's pmlab_report).
  type, bind(c), public :: pmlab_report
    integer(c_int32_t) :: created = 0, resumed = 0, already_done = 0, reserved = 0
    integer(c_int64_t) :: resume_phase = 0, regions_validated = 0, regions_inconsistent = 0
    integer(c_int64_t) :: regions_unwritten = 0, regions_recomputed = 0, crash_points = 0
  end type pmlab_report

  public :: pmlab_loop_new, pmlab_loop_free, pmlab_loop_add_array, pmlab_loop_set_layout, &
    pmlab_loop_set_params, pmlab_loop_set_option, pmlab_loop_open, pmlab_loop_array, &
    pmlab_loop_run, pmlab_loop_regions, pmlab_error_message, pmlab_status_name, c_str

  ! Strings passed to these end with c_null_char: c_str("a") does it.
  interface
    type(c_ptr) function pmlab_loop_new() bind(c, name="pmlab_loop_new")
      import :: c_ptr
    end function pmlab_loop_new
    subroutine pmlab_loop_free(loop) bind(c, name="pmlab_loop_free")
      import :: c_ptr
      type(c_ptr), value :: loop
    end subroutine pmlab_loop_free
    integer(c_int) function pmlab_loop_add_array(loop, name, count) &
        bind(c, name="pmlab_loop_add_array")
      import :: c_ptr, c_int, c_char, c_int64_t
      type(c_ptr), value :: loop
      character(kind=c_char), dimension(*) :: name
      integer(c_int64_t), value :: count
    end function pmlab_loop_add_array
    integer(c_int) function pmlab_loop_set_layout(loop, phases, outputs, first, last, chunk) &
        bind(c, name="pmlab_loop_set_layout")
      import :: c_ptr, c_int, c_char, c_int64_t
      type(c_ptr), value :: loop
      integer(c_int64_t), value :: phases, first, last, chunk
      character(kind=c_char), dimension(*) :: outputs
    end function pmlab_loop_set_layout
    integer(c_int) function pmlab_loop_set_params(loop, params, bytes) &
        bind(c, name="pmlab_loop_set_params")
      import :: c_ptr, c_int, c_size_t
      type(c_ptr), value :: loop, params
      integer(c_size_t), value :: bytes
    end function pmlab_loop_set_params
    integer(c_int) function pmlab_loop_set_option(loop, key, val) &
        bind(c, name="pmlab_loop_set_option")
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: loop
      character(kind=c_char), dimension(*) :: key, val
    end function pmlab_loop_set_option
    integer(c_int) function pmlab_loop_open(loop, path, init, user) bind(c, name="pmlab_loop_open")
      import :: c_ptr, c_int, c_char, c_funptr
      type(c_ptr), value :: loop, user
      character(kind=c_char), dimension(*) :: path
      type(c_funptr), value :: init
    end function pmlab_loop_open
    type(c_ptr) function pmlab_loop_array(loop, name) bind(c, name="pmlab_loop_array")
      import :: c_ptr, c_char
      type(c_ptr), value :: loop
      character(kind=c_char), dimension(*) :: name
    end function pmlab_loop_array
    integer(c_int) function pmlab_loop_run(loop, body, user, report) bind(c, name="pmlab_loop_run")
      import :: c_ptr, c_int, c_funptr, pmlab_report
      type(c_ptr), value :: loop, user
      type(c_funptr), value :: body
      type(pmlab_report) :: report
    end function pmlab_loop_run
    integer(c_int64_t) function pmlab_loop_regions(loop) bind(c, name="pmlab_loop_regions")
      import :: c_ptr, c_int64_t
      type(c_ptr), value :: loop
    end function pmlab_loop_regions
    type(c_ptr) function c_loop_error(loop) bind(c, name="pmlab_loop_error")
      import :: c_ptr
      type(c_ptr), value :: loop
    end function c_loop_error
    type(c_ptr) function c_strerror(status) bind(c, name="pmlab_strerror")
      import :: c_ptr, c_int
      integer(c_int), value :: status
    end function c_strerror
    integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function c_strlen
  end interface

contains

  ! s without trailing blanks, ended by c_null_char.
  function c_str(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=:), allocatable :: c
    c = trim(s) // c_null_char
  end function c_str

  ! A C string as a Fortran string.
  function f_str(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function f_str

  ! The message of the loop's last failure.
  function pmlab_error_message(loop) result(s)
    type(c_ptr), intent(in) :: loop
    character(len=:), allocatable :: s
    s = f_str(c_loop_error(loop))
  end function pmlab_error_message

  ! The name of a status ("PMLAB_E_MISMATCH", ...).
  function pmlab_status_name(status) result(s)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: s
    s = f_str(c_strerror(status))
  end function pmlab_status_name

end module pmlab
